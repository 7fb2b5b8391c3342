use super::*;
use proptest::prelude::*;

fn propose(coin: &str, side: Side, size: Size) -> ProposeArgs {
    ProposeArgs {
        coin: coin.to_string(),
        side,
        size,
        tp: None,
        sl: None,
        leverage: None,
        limit: None,
        exchange: None,
    }
}

fn ok(input: &str) -> Command {
    parse(input).unwrap_or_else(|e| panic!("{input:?} failed: {e} at {}", e.position))
}

fn err(input: &str) -> ParseError {
    match parse(input) {
        Ok(c) => panic!("{input:?} parsed as {c:?}"),
        Err(e) => e,
    }
}

#[test]
fn valid_inputs() {
    let btc = |size| Command::Propose(propose("BTC", Side::Long, size));
    let cases: Vec<(&str, Command)> = vec![
        ("/propose BTC long 0.01", btc(Size::Coin(0.01))),
        ("propose btc buy 0.01", btc(Size::Coin(0.01))),
        ("  /PROPOSE  BTCUSDT  LONG  0.01  ", btc(Size::Coin(0.01))),
        ("/propose BTC-USD long $500", btc(Size::Usd(500.0))),
        ("/propose btc/usdt long 500usd", btc(Size::Usd(500.0))),
        ("/propose BTC-PERP long 500$", btc(Size::Usd(500.0))),
        ("/propose BTC long 500USD", btc(Size::Usd(500.0))),
        ("/propose BTC long usd=1_500", btc(Size::Usd(1500.0))),
        ("/propose BTC long $1.5k", btc(Size::Usd(1500.0))),
        ("/propose BTC long .5", btc(Size::Coin(0.5))),
        (
            "/propose eth sell 2 tp=3k sl=3_600.5 lev=10x limit=3.1K ex=Venue2",
            Command::Propose(ProposeArgs {
                tp: Some(3000.0),
                sl: Some(3600.5),
                leverage: Some(10),
                limit: Some(3100.0),
                exchange: Some("venue2".into()),
                ..propose("ETH", Side::Short, Size::Coin(2.0))
            }),
        ),
        (
            "/propose SOL short usd=250 leverage=100 exchange=venue",
            Command::Propose(ProposeArgs {
                leverage: Some(100),
                exchange: Some("venue".into()),
                ..propose("SOL", Side::Short, Size::Usd(250.0))
            }),
        ),
        ("/confirm prop_7f3A", Command::Confirm("prop_7f3A".into())),
        (
            "/reject gi_1 too large, halve it",
            Command::Reject {
                id: "gi_1".into(),
                reason: Some("too large, halve it".into()),
            },
        ),
        (
            "/reject prop_9",
            Command::Reject {
                id: "prop_9".into(),
                reason: None,
            },
        ),
        (
            "/agent demo-agent",
            Command::Agent(Some("demo-agent".into())),
        ),
        ("/agent ALL", Command::Agent(None)),
        (
            "/close eth",
            Command::Close(CloseTarget::Coin("ETH".into())),
        ),
        ("/close ALL", Command::Close(CloseTarget::All)),
        ("refresh", Command::Refresh),
        ("/Help", Command::Help),
        ("/quit", Command::Quit),
        ("/q", Command::Quit),
    ];
    for (input, expected) in cases {
        assert_eq!(ok(input), expected, "input {input:?}");
    }
}

#[test]
fn numbers() {
    assert_eq!(parse_amount("72000"), Ok(72000.0));
    assert_eq!(parse_amount("72_000"), Ok(72000.0));
    assert_eq!(parse_amount("72k"), Ok(72000.0));
    assert_eq!(parse_amount("1.1k"), Ok(1100.0));
    assert_eq!(parse_amount("1.23456k"), Ok(1234.56));
    assert_eq!(parse_amount("1.5m"), Ok(1_500_000.0));
    assert_eq!(parse_amount("5."), Ok(5.0));
    assert_eq!(parse_amount("0"), Err(AmountError::NotPositive));
    assert_eq!(parse_amount("0.0k"), Err(AmountError::NotPositive));
    assert_eq!(parse_amount("-3"), Err(AmountError::NotPositive));
    for bad in [
        "", ".", "k", "1e5", "inf", "NaN", "+1", "1__0", "_1", "1_", "1._5", "1.2.3", "--1", "1kk",
        "0x10", "١٢",
    ] {
        assert_eq!(parse_amount(bad), Err(AmountError::NotANumber), "{bad:?}");
    }
    assert_eq!(parse_amount(&"9".repeat(400)), Err(AmountError::TooLarge));
}

#[test]
fn invalid_inputs() {
    let cases: &[(&str, &str, usize)] = &[
        ("", "empty command; type /help for the list of commands", 0),
        (
            "   /",
            "missing command name after `/`; type /help for the list of commands",
            3,
        ),
        (
            "/propse BTC",
            "unknown command `/propse`; did you mean `/propose`?",
            0,
        ),
        ("/qu", "unknown command `/qu`; did you mean `/quit`?", 0),
        ("/exit", "unknown command `/exit`; did you mean `/quit`?", 0),
        (
            "/zzz",
            "unknown command `/zzz`; type /help for the list of commands",
            0,
        ),
        (
            "/propose BTC long",
            "missing <size>; usage: /propose <coin> <long|short> <size> [tp=PX] [sl=PX] [lev=N] [limit=PX] [ex=venue|venue2]",
            17,
        ),
        (
            "/propose  ",
            "missing <coin>; usage: /propose <coin> <long|short> <size> [tp=PX] [sl=PX] [lev=N] [limit=PX] [ex=venue|venue2]",
            8,
        ),
        (
            "/propose BTC up 1",
            "invalid side `up`; expected long, short, buy or sell",
            13,
        ),
        (
            "/propose B$C long 1",
            "invalid coin `B$C`; expected a symbol like BTC, ETHUSDT or SOL-USD",
            9,
        ),
        (
            "/propose BTC long 1 tp=abc",
            "invalid tp `abc`; expected a positive number like 72000, 72_000, 72k or 0.5",
            23,
        ),
        (
            "/propose BTC long -1",
            "size must be greater than zero (got `-1`)",
            18,
        ),
        (
            "/propose BTC long $0",
            "size must be greater than zero (got `0`)",
            19,
        ),
        (
            "/propose BTC long 1 sl=-5",
            "sl must be greater than zero (got `-5`)",
            23,
        ),
        (
            "/propose BTC long 1 lev=0",
            "leverage must be between 1 and 100 (got `0`)",
            24,
        ),
        (
            "/propose BTC long 1 lev=101",
            "leverage must be between 1 and 100 (got `101`)",
            24,
        ),
        (
            "/propose BTC long 1 lev=-2",
            "leverage must be between 1 and 100 (got `-2`)",
            24,
        ),
        (
            "/propose BTC long 1 lev=2.5",
            "invalid leverage `2.5`; expected a whole number from 1 to 100",
            24,
        ),
        (
            "/propose BTC long 1 tpp=5",
            "unknown option `tpp=`; did you mean `tp=`? options are tp=, sl=, lev=, limit=, ex= and usd=",
            20,
        ),
        (
            "/propose BTC long 1 tp=5 TP=6",
            "duplicate option `TP=`",
            25,
        ),
        (
            "/propose BTC long 1 lev=5 leverage=6",
            "duplicate option `leverage=`",
            26,
        ),
        ("/propose BTC long 1 tp=", "missing value after `tp=`", 23),
        (
            "/propose BTC long 1 usd=5",
            "size given twice: use either a positional size or usd=, not both",
            20,
        ),
        (
            "/propose BTC long 1 72000",
            "unexpected argument `72000`; options are written key=value, e.g. tp=72000",
            20,
        ),
        (
            "/propose BTC long 1 ex=binance",
            "invalid exchange `binance`; expected venue or venue2",
            23,
        ),
        (
            "/confirm",
            "missing <proposalId>; usage: /confirm <proposalId>",
            8,
        ),
        (
            "/confirm a b",
            "unexpected argument `b`; usage: /confirm <proposalId>",
            11,
        ),
        ("/close", "missing <coin|all>; usage: /close <coin|all>", 6),
        ("/quit now", "unexpected argument `now`; usage: /quit", 6),
    ];
    for (input, message, position) in cases {
        let e = err(input);
        assert_eq!(e.message, *message, "input {input:?}");
        assert_eq!(e.position, *position, "position for {input:?}");
        assert_eq!(e.to_string(), *message);
    }
}

#[test]
fn backtest_command() {
    for input in [
        "/backtest ema_cross BTC 1h 30 fast=9 slow=21.5",
        "backtest ema_cross btc-usd 1H 30 fast=9 slow=21.5",
        "/BACKTEST ema_cross BTCUSDT 1h 30 fast=9.0 slow=21.50",
    ] {
        assert_eq!(
            ok(input),
            Command::Backtest(BacktestArgs {
                strategy: "ema_cross".into(),
                pair: "BTC-USD".into(),
                timeframe: "1h".into(),
                days: 30,
                params: vec![("fast".into(), 9.0), ("slow".into(), 21.5)],
            }),
            "{input}"
        );
    }
    assert_eq!(
        ok("/backtest rsi ETH 5m 7 lower=-2 upper=0").to_string(),
        "/backtest rsi ETH-USD 5m 7 lower=-2 upper=0"
    );
    let cases: &[(&str, &str, usize)] = &[
        (
            "/backtest",
            "missing <strategyId>; usage: /backtest <strategyId> <pair> <timeframe> <days> [param=N ...]",
            9,
        ),
        (
            "/backtest x BTC 1h",
            "missing <days>; usage: /backtest <strategyId> <pair> <timeframe> <days> [param=N ...]",
            18,
        ),
        (
            "/backtest x BTC-EUR 1h 3",
            "invalid pair `BTC-EUR`; expected BTC, BTC-USD or BTCUSDT",
            12,
        ),
        (
            "/backtest x BTC 1y 3",
            "invalid timeframe `1y`; expected a number and m, h, d or w, like 5m or 1h",
            16,
        ),
        (
            "/backtest x BTC 1h 0",
            "days must be a whole number from 1 to 3650 (got `0`)",
            19,
        ),
        (
            "/backtest x BTC 1h 3.5",
            "invalid days `3.5`; expected a whole number from 1 to 3650",
            19,
        ),
        (
            "/backtest x BTC 1h 3 fast=abc",
            "invalid value `abc` for fast; expected a number like 14, 0.5 or -2",
            26,
        ),
        (
            "/backtest x BTC 1h 3 fast=1 fast=2",
            "duplicate parameter `fast=`",
            28,
        ),
        (
            "/backtest x BTC 1h 3 9",
            "unexpected argument `9`; strategy parameters are written name=number, e.g. fast=9",
            21,
        ),
        (
            "/backtest a/b BTC 1h 3",
            "invalid strategy id `a/b`; expected letters, digits, `_`, `-` or `.`",
            10,
        ),
    ];
    for (input, message, position) in cases {
        let e = err(input);
        assert_eq!(e.message, *message, "input {input:?}");
        assert_eq!(e.position, *position, "position for {input:?}");
    }
}

#[test]
fn top_command() {
    assert_eq!(
        ok("/top combos pair=eth tf=1H days=60 perStrategy=2 minreturnpct=-1.5 filter=default"),
        Command::Top(TopArgs {
            view: TopView::Combos,
            params: vec![
                TopParam::Pair(Some("ETH-USD".into())),
                TopParam::Timeframe(Some("1h".into())),
                TopParam::Days(Some(60)),
                TopParam::PerStrategy(Some(2)),
                TopParam::MinReturnPct(Some(-1.5)),
                TopParam::Filter(None),
            ],
        })
    );
    assert_eq!(
        ok("top combos pair=eth tf=1H filter=DEFAULT").to_string(),
        "/top combos pair=ETH-USD timeframe=1h filter=default"
    );
    assert_eq!(
        ok("/top backtests filter=Excellent includeall=yes").to_string(),
        "/top backtests filter=excellent includeAll=true"
    );
    assert_eq!(
        ok("/top live"),
        Command::Top(TopArgs {
            view: TopView::Live,
            params: vec![],
        })
    );
    let cases: &[(&str, &str, usize)] = &[
        (
            "/top",
            "missing <backtests|live|combos>; usage: /top <backtests|live|combos> [key=value ...]",
            4,
        ),
        (
            "/top best",
            "unknown view `best`; expected backtests, live or combos",
            5,
        ),
        (
            "/top live windowdays=0",
            "windowDays must be a whole number from 1 to 3650 (got `0`)",
            21,
        ),
        (
            "/top combos filter=excellent",
            "invalid filter `excellent`; expected good, all",
            19,
        ),
        (
            "/top live pair=BTC",
            "unknown option `pair=` for /top live; options are windowDays=, limit=",
            10,
        ),
        (
            "/top combos perstrat=2",
            "unknown option `perstrat=` for /top combos; did you mean `perStrategy=`? options are pair=, timeframe=, days=, perStrategy=, limit=, filter=, minReturnPct=, minTrades=",
            12,
        ),
        ("/top combos days=3 DAYS=4", "duplicate option `DAYS=`", 19),
        (
            "/top combos limit=",
            "missing value after `limit=`; write limit=default to reset it",
            18,
        ),
        (
            "/top backtests includeAll=maybe",
            "invalid includeAll `maybe`; expected true or false",
            26,
        ),
    ];
    for (input, message, position) in cases {
        let e = err(input);
        assert_eq!(e.message, *message, "input {input:?}");
        assert_eq!(e.position, *position, "position for {input:?}");
    }
    assert_eq!(ok("/job job_12ab").to_string(), "/job job_12ab");
    assert_eq!(err("/job a/b").position, 5);
}

#[test]
fn control_characters_are_not_echoed_raw() {
    let e = err("/propose BTC long 1 tp=\u{1b}[2J");
    assert_eq!(
        e.message,
        "invalid tp `\\u{1b}[2J`; expected a positive number like 72000, 72_000, 72k or 0.5"
    );
}

#[test]
fn positions_count_chars_not_bytes() {
    let e = err("/propose é long 1");
    assert_eq!(e.position, 9);
    let e = err("/propose BTC long 1 tp=€");
    assert_eq!(e.position, 23);
}

#[test]
fn coin_normalisation() {
    for (raw, want) in [
        ("btc", Some("BTC")),
        ("BTCUSDT", Some("BTC")),
        ("ethusdc", Some("ETH")),
        ("BTC-USD", Some("BTC")),
        ("sol_usdt", Some("SOL")),
        ("1000PEPE", Some("1000PEPE")),
        ("USDT", Some("USDT")),
        ("BTC-EUR", None),
        ("-USD", None),
        ("bitcoin!", None),
        ("ÄBC", None),
    ] {
        assert_eq!(normalize_coin(raw).as_deref(), want, "{raw:?}");
    }
}

#[test]
fn propose_to_signal() {
    let Command::Propose(args) =
        ok("/propose btc short $500 tp=60k sl=70000 lev=5 limit=65000 ex=venue2")
    else {
        panic!("not a propose");
    };
    assert_eq!(
        args.to_signal(),
        TradeSignal {
            strategy: Some("console".into()),
            a: Some("BTCUSDT".into()),
            d: Some("short".into()),
            o: Some("limit".into()),
            p: Some(65000.0),
            tp: Some(60000.0),
            sl: Some(70000.0),
            size_usd: Some(500.0),
            leverage: Some(5),
            exchange: Some("venue2".into()),
            ..TradeSignal::default()
        }
    );
    let market = propose("ETH", Side::Long, Size::Coin(0.25)).to_signal();
    assert_eq!(market.o.as_deref(), Some("market"));
    assert_eq!(market.d.as_deref(), Some("long"));
    assert_eq!(market.size, Some(0.25));
    assert_eq!(
        (market.p, market.size_usd, market.leverage),
        (None, None, None)
    );
}

#[test]
fn close_to_signal() {
    let coin = CloseTarget::Coin("ETH".into()).to_signal();
    assert_eq!(coin.a.as_deref(), Some("ETHUSDT"));
    assert_eq!(coin.d.as_deref(), Some("close"));
    assert_eq!(coin.action, None);
    let all = CloseTarget::All.to_signal();
    assert_eq!(all.action.as_deref(), Some("close_all"));
    assert_eq!((all.a, all.d), (None, None));
}

#[test]
fn display_is_canonical() {
    assert_eq!(
        ok("propose btcusdt BUY 500usd lev=3x EX=VENUE tp=72_000").to_string(),
        "/propose BTC long $500 tp=72000 lev=3 ex=venue"
    );
    assert_eq!(ok("/q").to_string(), "/quit");
    assert_eq!(ok("close All").to_string(), "/close all");
}

#[test]
fn commands_table_matches_parser() {
    for spec in COMMANDS {
        assert!(spec.usage.starts_with(&format!("/{}", spec.name)));
        // Every listed name parses as a command: the error, if any, is about its arguments.
        if let Err(e) = parse(spec.name) {
            assert!(
                e.message.starts_with("missing"),
                "{}: {}",
                spec.name,
                e.message
            );
        }
    }
}

#[test]
fn completion() {
    let coins = ["BTC", "ETH", "BNB", "SOL"];
    let cases: &[(&str, &[&str])] = &[
        ("/pro", &["/propose "]),
        ("pro", &["/propose "]),
        ("/c", &["/chat ", "/close ", "/confirm "]),
        ("/re", &["/refresh", "/reject ", "/research ", "/resume "]),
        (
            "/research s",
            &["/research say ", "/research start ", "/research stop"],
        ),
        ("/research st", &["/research start ", "/research stop"]),
        ("/q", &["/quit"]),
        ("/REF", &["/refresh"]),
        ("/zzz", &[]),
        ("/propose b", &["/propose BNB ", "/propose BTC "]),
        (
            "/propose ",
            &[
                "/propose BNB ",
                "/propose BTC ",
                "/propose ETH ",
                "/propose SOL ",
            ],
        ),
        ("/propose BTC l", &["/propose BTC long "]),
        (
            "/propose BTC ",
            &["/propose BTC long ", "/propose BTC short "],
        ),
        ("/propose BTC long ", &[]),
        ("/propose BTC long u", &["/propose BTC long usd="]),
        (
            "/propose BTC long 0.1 ",
            &[
                "/propose BTC long 0.1 ex=",
                "/propose BTC long 0.1 lev=",
                "/propose BTC long 0.1 limit=",
                "/propose BTC long 0.1 sl=",
                "/propose BTC long 0.1 tp=",
            ],
        ),
        (
            "/propose BTC long 0.1 tp=1 l",
            &[
                "/propose BTC long 0.1 tp=1 lev=",
                "/propose BTC long 0.1 tp=1 limit=",
            ],
        ),
        ("/propose BTC long usd=5 u", &[]),
        (
            "/propose BTC long 1 leverage=2 l",
            &["/propose BTC long 1 leverage=2 limit="],
        ),
        (
            "/propose BTC long 1 ex=",
            &[
                "/propose BTC long 1 ex=venue ",
                "/propose BTC long 1 ex=venue2 ",
            ],
        ),
        (
            "/propose BTC long 1 ex=venue2",
            &["/propose BTC long 1 ex=venue2 "],
        ),
        (
            "/close ",
            &[
                "/close BNB",
                "/close BTC",
                "/close ETH",
                "/close SOL",
                "/close all",
            ],
        ),
        ("/close a", &["/close all"]),
        ("/close e", &["/close ETH"]),
        ("/confirm ", &[]),
        ("/quit ", &[]),
        ("/t", &["/tool ", "/top ", "/trade "]),
        ("/top c", &["/top combos "]),
        ("/top live ", &["/top live limit=", "/top live windowDays="]),
        ("/top live limit=5 ", &["/top live limit=5 windowDays="]),
        (
            "/top combos p",
            &["/top combos pair=", "/top combos perStrategy="],
        ),
        ("/backtest rsi e", &["/backtest rsi ETH-USD "]),
        (
            "/backtest rsi ETH-USD 1",
            &[
                "/backtest rsi ETH-USD 15m ",
                "/backtest rsi ETH-USD 1d ",
                "/backtest rsi ETH-USD 1h ",
                "/backtest rsi ETH-USD 1m ",
            ],
        ),
    ];
    for (input, want) in cases {
        assert_eq!(complete(input, &coins), *want, "input {input:?}");
    }
    let all = complete("", &coins);
    // One entry per command name (the research subcommands complete after `/research `).
    assert_eq!(
        all.len(),
        COMMANDS.iter().filter(|c| !c.name.contains(' ')).count()
    );
    assert!(all.contains(&"/propose ".to_string()));
    assert_eq!(complete("/c", &["BTC", "BTC"]), complete("/c", &[]));
    assert_eq!(complete("/close b", &["BTC", "BTC"]), vec!["/close BTC"]);
}

fn coin() -> impl Strategy<Value = String> {
    "[A-Z][A-Z0-9]{0,7}".prop_filter("must be a fixed point of normalisation", |c| {
        normalize_coin(c).as_deref() == Some(c.as_str()) && c != "ALL"
    })
}

fn positive() -> impl Strategy<Value = f64> {
    prop_oneof![
        proptest::num::f64::POSITIVE | proptest::num::f64::NORMAL,
        (1u64..100_000_000, 0u32..9).prop_map(|(m, e)| m as f64 / 10f64.powi(e as i32)),
    ]
}

fn command() -> impl Strategy<Value = Command> {
    let size = prop_oneof![
        positive().prop_map(Size::Coin),
        positive().prop_map(Size::Usd)
    ];
    let side = prop_oneof![Just(Side::Long), Just(Side::Short)];
    let exchange = proptest::option::of(prop_oneof![Just("venue"), Just("venue2")]);
    let propose = (
        coin(),
        side,
        size,
        proptest::option::of(positive()),
        proptest::option::of(positive()),
        proptest::option::of(1u32..=100),
        proptest::option::of(positive()),
        exchange,
    )
        .prop_map(|(coin, side, size, tp, sl, leverage, limit, exchange)| {
            Command::Propose(ProposeArgs {
                coin,
                side,
                size,
                tp,
                sl,
                leverage,
                limit,
                exchange: exchange.map(str::to_string),
            })
        });
    let param = (
        "[a-z][a-zA-Z0-9_]{0,10}",
        (-100_000_000i64..100_000_000, 0u32..6).prop_map(|(m, e)| m as f64 / 10f64.powi(e as i32)),
    );
    let backtest = (
        "[a-z][a-z0-9_.-]{0,20}",
        coin(),
        (
            1u32..1000,
            prop_oneof![Just('m'), Just('h'), Just('d'), Just('w')],
        ),
        1u32..=3650,
        proptest::collection::vec(param, 0..4),
    )
        .prop_map(|(strategy, coin, (n, unit), days, params)| {
            let mut seen = Vec::new();
            let params = params
                .into_iter()
                .filter(|(k, _)| {
                    let new = !seen.contains(k);
                    seen.push(k.clone());
                    new
                })
                .collect();
            Command::Backtest(BacktestArgs {
                strategy,
                pair: format!("{coin}-USD"),
                timeframe: format!("{n}{unit}"),
                days,
                params,
            })
        });
    let top = prop_oneof![
        (
            proptest::option::of(prop_oneof![Just("good"), Just("excellent"), Just("all")]),
            proptest::option::of(any::<bool>()),
        )
            .prop_map(|(filter, include_all)| TopArgs {
                view: TopView::Backtests,
                params: vec![
                    TopParam::IncludeAll(include_all),
                    TopParam::Filter(filter.map(str::to_string)),
                ],
            }),
        (
            proptest::option::of(1u32..=3650),
            proptest::option::of(1u32..=10_000)
        )
            .prop_map(|(w, l)| TopArgs {
                view: TopView::Live,
                params: vec![TopParam::Limit(l), TopParam::WindowDays(w)],
            }),
        (
            proptest::option::of(coin()),
            proptest::option::of(1u32..=3650),
            proptest::option::of(1u32..=10_000),
            proptest::option::of((-100_000i64..100_000).prop_map(|m| m as f64 / 100.0)),
            proptest::option::of(0u32..=1_000_000),
            proptest::option::of(prop_oneof![Just("good"), Just("all")]),
        )
            .prop_map(|(pair, days, per, min_ret, min_trades, filter)| TopArgs {
                view: TopView::Combos,
                params: vec![
                    TopParam::MinTrades(min_trades),
                    TopParam::Pair(pair.map(|c| format!("{c}-USD"))),
                    TopParam::Timeframe(Some("15m".into())),
                    TopParam::Days(days),
                    TopParam::PerStrategy(per),
                    TopParam::MinReturnPct(min_ret),
                    TopParam::Filter(filter.map(str::to_string)),
                ],
            }),
    ]
    .prop_map(Command::Top);
    prop_oneof![
        propose,
        backtest,
        top,
        "[A-Za-z0-9_.-]{1,24}".prop_map(Command::Job),
        "[A-Za-z0-9_-]{1,24}".prop_map(Command::Confirm),
        "[A-Za-z0-9_-]{1,24}".prop_map(|id| Command::Reject { id, reason: None }),
        "[A-Za-z0-9_-]{1,24}"
            .prop_filter("all means every agent", |n| !n.eq_ignore_ascii_case("all"))
            .prop_map(|n| Command::Agent(Some(n))),
        Just(Command::Agent(None)),
        coin().prop_map(|c| Command::Close(CloseTarget::Coin(c))),
        Just(Command::Close(CloseTarget::All)),
        Just(Command::Refresh),
        Just(Command::Help),
        Just(Command::Quit),
    ]
}

/// Lines made of grammar fragments reach deep into the parser, where random text rarely gets.
fn grammar_soup() -> impl Strategy<Value = String> {
    let fragment = prop_oneof![
        Just("/propose".to_string()),
        Just("close".to_string()),
        Just("/confirm".to_string()),
        Just("all".to_string()),
        Just("BTC".to_string()),
        Just("long".to_string()),
        Just("$".to_string()),
        Just("=".to_string()),
        "(tp|sl|lev|leverage|limit|ex|usd|x)=[-0-9_.kKmMxé$]{0,6}",
        "[-$0-9_.kKmMuUsSdD]{0,8}",
        "\\PC{0,4}",
    ];
    proptest::collection::vec(fragment, 0..8).prop_map(|v| v.join(" "))
}

proptest! {
    #[test]
    fn parse_never_panics(input in any::<String>()) {
        let _ = parse(&input);
        let _ = complete(&input, &["BTC", "ÉTH"]);
    }

    #[test]
    fn parse_never_panics_on_near_misses(input in grammar_soup()) {
        if let Err(e) = parse(&input) {
            prop_assert!(e.position <= input.chars().count());
        }
        for line in complete(&input, &["BTC", "ETH"]) {
            prop_assert!(!line.is_empty());
        }
    }

    #[test]
    fn display_round_trips(cmd in command()) {
        let text = cmd.to_string();
        prop_assert_eq!(parse(&text), Ok(cmd), "text {:?}", text);
    }
}
