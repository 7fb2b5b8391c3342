use super::*;

fn text(buf: &Buffer) -> Vec<String> {
    (0..buf.area.height)
        .map(|y| {
            (0..buf.area.width)
                .map(|x| buf[(x, y)].symbol().to_string())
                .collect::<String>()
                .trim_end()
                .to_string()
        })
        .collect()
}

fn is_braille(s: &str) -> bool {
    s.chars().any(|c| ('\u{2801}'..='\u{28ff}').contains(&c))
}

fn level(name: &'static str, value: f64) -> Level {
    Level {
        name,
        value,
        style: Style::new(),
        glyph: '╌',
    }
}

fn draw_price(points: &[Point], levels: &[Level], w: u16, h: u16) -> Vec<String> {
    let area = Rect::new(0, 0, w, h);
    let mut buf = Buffer::empty(area);
    price(
        &mut buf,
        area,
        &Theme::monochrome(),
        PriceChart {
            coin: "ETH",
            source: "1m candles from the sandbox",
            points: points.iter().copied(),
            levels,
            empty: "no price history yet",
        },
    );
    text(&buf)
}

fn ramp(n: usize, from: f64, to: f64) -> Vec<Point> {
    (0..n)
        .map(|i| {
            let f = i as f64 / (n.max(2) - 1) as f64;
            (1_700_000_000.0 + 60.0 * i as f64, from + (to - from) * f)
        })
        .collect()
}

#[test]
fn a_level_outside_the_prices_widens_the_scale_and_is_named() {
    let points = ramp(120, 3000.0, 3050.0);
    let levels = [
        level("Entry", 3040.0),
        level("TP", 3120.0),
        level("SL", 2990.0),
    ];
    let rows = draw_price(&points, &levels, 70, 14);
    let joined = rows.join("\n");
    for label in ["Entry 3,040.0", "TP 3,120.0", "SL 2,990.0"] {
        assert!(joined.contains(label), "{label} missing:\n{joined}");
    }
    // The TP is above every price: its line is on the plot's top row, with its name.
    let tp = rows.iter().position(|r| r.contains("TP 3,120.0")).unwrap();
    assert!(rows[tp].contains('╌'), "{}", rows[tp]);
    assert!(tp <= 2, "the highest level is near the top:\n{joined}");
    let sl = rows.iter().position(|r| r.contains("SL 2,990.0")).unwrap();
    assert!(
        sl > tp && sl >= 10,
        "the lowest level is near the bottom:\n{joined}"
    );
    assert!(
        rows.iter().any(|r| is_braille(r)),
        "the series is braille:\n{joined}"
    );
    assert!(rows[0].starts_with("ETH · 1m candles from the sandbox · last 3,050.0"));
    // The span under the plot: two hours, its first and last minute.
    assert!(rows[13].contains("← 1h59m →"), "{}", rows[13]);
}

#[test]
fn a_flat_series_draws_one_line_and_one_point_a_dot() {
    let flat: Vec<Point> = (0..50).map(|i| (i as f64 * 60.0, 100.0)).collect();
    let rows = draw_price(&flat, &[], 40, 8);
    let braille: Vec<_> = rows.iter().filter(|r| is_braille(r)).collect();
    assert_eq!(braille.len(), 1, "{rows:#?}");
    let one = draw_price(&[(0.0, 100.0)], &[], 60, 8);
    assert!(one[0].contains("last 100.00"), "{one:#?}");
    let dot_rows: Vec<_> = one.iter().filter(|r| is_braille(r)).collect();
    assert_eq!(dot_rows.len(), 1, "{one:#?}");
    assert_eq!(
        dot_rows[0]
            .chars()
            .filter(|c| is_braille(&c.to_string()))
            .count(),
        1
    );
}

#[test]
fn no_points_say_so_instead_of_an_empty_box() {
    let rows = draw_price(&[], &[level("TP", 10.0)], 40, 8);
    assert_eq!(rows[0], "ETH · 1m candles from the sandbox");
    assert_eq!(rows[1], "no price history yet");
    assert!(rows[2..].iter().all(|r| r.is_empty()));
    // Not-a-number is no point either.
    let rows = draw_price(&[(f64::NAN, 1.0), (1.0, f64::INFINITY)], &[], 40, 4);
    assert_eq!(rows[1], "no price history yet");
}

#[test]
fn two_levels_on_one_row_keep_both_names() {
    let points = ramp(30, 100.0, 200.0);
    let levels = [level("Entry", 150.0), level("SL", 150.0)];
    let rows = draw_price(&points, &levels, 50, 8).join("\n");
    assert!(
        rows.contains("Entry 150.00") && rows.contains("SL 150.00"),
        "{rows}"
    );
    // The second name is off its line, and says which way the line is.
    assert!(
        rows.contains("↑SL 150.00") || rows.contains("↓SL 150.00"),
        "{rows}"
    );
}

#[test]
fn many_points_reduce_to_two_columns_per_cell_keeping_the_extremes() {
    let mut points = ramp(10_000, 1.0, 2.0);
    points[5_000].1 = 50.0;
    let cols = columns(points.iter().copied(), 1_700_000_000.0, points[9_999].0, 40);
    assert_eq!(cols.len(), 40);
    assert!(cols.iter().all(Option::is_some));
    assert_eq!(
        cols.iter().flatten().map(|c| c.hi).fold(0.0, f64::max),
        50.0
    );
    assert_eq!(cols[0].unwrap().first, 1.0);
    assert_eq!(cols[39].unwrap().last, 2.0);
    // One x: the latest column.
    let one = columns([(5.0, 1.0)].into_iter(), 5.0, 5.0, 10);
    assert!(one[9].is_some() && one[..9].iter().all(Option::is_none));
    assert!(columns([(5.0, 1.0)].into_iter(), 5.0, 5.0, 0).is_empty());
}

#[test]
fn the_scale_covers_the_levels_and_gives_a_flat_series_a_band() {
    let s = Scale::fit(
        100.0,
        110.0,
        [90.0, f64::NAN, 0.0_f64.max(120.0)].into_iter(),
    );
    assert!(s.lo < 90.0 && s.hi > 120.0);
    assert_eq!(s.row(s.hi, 40), 0);
    assert_eq!(s.row(s.lo, 40), 39);
    let flat = Scale::fit(5.0, 5.0, std::iter::empty());
    assert!(flat.lo < 5.0 && flat.hi > 5.0);
    assert_eq!(flat.row(5.0, 41), 20);
}

#[test]
fn underwater_is_the_drop_from_the_running_peak() {
    let eq = [(0.0, 100.0), (1.0, 120.0), (2.0, 90.0), (3.0, 130.0)];
    let dd: Vec<f64> = underwater(eq.iter().copied()).map(|p| p.1).collect();
    assert_eq!(dd, vec![0.0, 0.0, -25.0, 0.0]);
}

fn draw_equity(points: &[Point], w: u16, h: u16) -> Vec<String> {
    let area = Rect::new(0, 0, w, h);
    let mut buf = Buffer::empty(area);
    equity(
        &mut buf,
        area,
        &Theme::monochrome(),
        EquityChart {
            name: "Equity",
            equity: points.iter().copied(),
            drawdown: underwater(points.iter().copied()),
            empty: "no equity curve yet",
        },
    );
    text(&buf)
}

#[test]
fn an_equity_curve_has_its_scale_return_drawdown_and_span() {
    let day = 86_400.0;
    let t0 = 1_735_689_600.0; // 2025-01-01
    let points: Vec<Point> = [10_000.0, 11_000.0, 8_800.0, 12_000.0]
        .iter()
        .enumerate()
        .map(|(i, e)| (t0 + 20.0 * day * i as f64, *e))
        .collect();
    let rows = draw_equity(&points, 72, 12);
    let joined = rows.join("\n");
    assert!(
        rows[0].starts_with("Equity 10,000.00 → 12,000.00 (+20.00%) · max drawdown -20.00%"),
        "{joined}"
    );
    assert!(rows[1].starts_with("12,000.00"), "{joined}");
    assert!(joined.contains(" 8,800.00"), "{joined}");
    assert!(
        joined.contains("      0%") && joined.contains("  -20.0%"),
        "{joined}"
    );
    assert!(rows[11].starts_with("          01-01"), "{joined}");
    assert!(
        rows[11].contains("← 60d00h →") && rows[11].ends_with("03-02"),
        "{joined}"
    );
}

#[test]
fn a_short_equity_chart_keeps_high_span_and_low() {
    let points: Vec<Point> = (0..840)
        .map(|i| (i as f64, 100.0 + (i % 7) as f64))
        .collect();
    let rows = draw_equity(&points, 40, 3);
    assert!(rows[0].starts_with("  106.00 "), "{rows:#?}");
    assert!(rows[1].starts_with("over 13m "), "{rows:#?}");
    assert!(rows[2].starts_with("  100.00 "), "{rows:#?}");
    assert!(rows.iter().all(|r| is_braille(r)));
    let none = draw_equity(&points[..1], 40, 3);
    assert_eq!(none[0], "no equity curve yet");
}

#[test]
fn spans_and_times_read_at_their_scale() {
    assert_eq!(span_text(42.0), "42s");
    assert_eq!(span_text(14.0 * 60.0 + 5.0), "14m");
    assert_eq!(span_text(2.0 * 3600.0 + 300.0), "2h05m");
    assert_eq!(span_text(3.0 * 86_400.0 + 4.0 * 3600.0), "3d04h");
    assert_eq!(time_text(1_735_689_600.0 + 3720.0, 3600.0), "01:02");
    assert_eq!(time_text(1_735_689_600.0, 30.0 * 86_400.0), "01-01");
    assert_eq!(time_text(1_735_689_600.0, 500.0 * 86_400.0), "2025-01");
}

#[test]
fn a_level_that_would_flatten_the_prices_is_named_at_the_edge_it_lies_past() {
    let points = ramp(120, 120.0, 126.0);
    let levels = [
        level("Entry", 122.7),
        level("Liq", 62.9),
        level("TP", 140.0),
    ];
    let rows = draw_price(&points, &levels, 60, 12);
    let joined = rows.join("\n");
    // The prices keep a fifth of the height at least, not one flat row.
    assert!(
        rows.iter().filter(|r| is_braille(r)).count() >= 3,
        "{joined}"
    );
    assert!(rows[rows.len() - 2].ends_with("↓Liq 62.900"), "{joined}");
    assert!(
        !rows[rows.len() - 2].contains('╌'),
        "no line where the price is not:\n{joined}"
    );
    // The TP is near enough to widen the scale, and has its line.
    let tp = rows.iter().find(|r| r.contains("TP 140.00")).unwrap();
    assert!(tp.contains('╌') && !tp.contains('↑'), "{joined}");
    let (lo, hi, beyond) = fit_levels(120.0, 126.0, &[122.7, 62.9, 140.0]);
    assert_eq!((lo, hi, beyond), (120.0, 140.0, vec![false, true, false]));
    // A flat series has no shape to keep: every level is placed.
    let (lo, hi, beyond) = fit_levels(100.0, 100.0, &[50.0, 200.0]);
    assert_eq!((lo, hi, beyond), (50.0, 200.0, vec![false, false]));
}
