//! The sandbox's state: one writer, many readers.
//!
//! Every request that may write runs to completion under the one lock, on the one writer
//! connection: serializing writes keeps every operation trivially atomic, and confirm's
//! exactly-once and the durability of what was acknowledged rest on that alone.
//!
//! Reads do not take that lock. Each commit publishes the books it made (an `Arc` swapped under a
//! short read–write lock, never held across SQL), and a read answers from that snapshot and from a
//! read-only WAL connection of a small pool — SQLite's WAL gives each read a committed snapshot
//! while the writer goes on. A read that finds the venue behind the clock by a tick or more is
//! served through the writer instead, which catches the venue up first (see [`Shared::read_view`]).

use super::clock::Clock;
use super::error::AppError;
use super::keys;
use super::settings::Settings;
use super::store::{AccountRow, DbLocation, DbResult, Store};
use super::venue::FeeConfig;
use super::venue::exchange::{Book, Fill};
use super::venue::market::Market;
use crate::api::Scope;
use crate::secret::Secret;
use chrono::{DateTime, Duration, Utc};
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, RwLock};
use tokio::sync::Notify;

/// Equity is snapshotted at most this often (sandbox time), for period PnL.
const SNAPSHOT_EVERY: Duration = Duration::minutes(5);
/// The first oid handed out on a new database; venue oids are large integers.
const FIRST_OID: u64 = 100_000_000;

/// A core just opened, the demo account, and the keys created with a new database.
pub type Opened = (Core, AccountRow, Vec<(Scope, Secret)>);

/// Each account's book. Books are shared with readers by `Arc`, so publishing a commit copies
/// pointers, not positions.
pub type Books = HashMap<i64, Arc<Book>>;

/// What a commit publishes to readers: the books and how far the venue has processed the feed.
#[derive(Clone)]
pub struct Published {
    pub books: Arc<Books>,
    pub last_sync: DateTime<Utc>,
}

pub struct Core {
    pub store: Store,
    books: Arc<Books>,
    pub market: Arc<Market>,
    pub settings: Settings,
    pub next_oid: u64,
    /// The venue has processed the feed up to here.
    pub last_sync: DateTime<Utc>,
    /// The backtest queue; set once the workers run.
    pub jobs: Option<super::backtests::JobSender>,
    /// Wakes this sandbox's signal delivery loop when a signal was queued, so a delivery does not
    /// wait for the next tick.
    pub signal_wake: Arc<Notify>,
    /// Wakes the live strategies' loop when a signal destination was added: with none, it waits
    /// for one instead of asking the database every tick.
    pub destination_added: Arc<Notify>,
    /// Backtest jobs running in this process and the bars they reuse (memory only).
    pub backtests: Arc<super::backtests::Live>,
    last_snapshot: DateTime<Utc>,
    published: Arc<RwLock<Published>>,
    /// The database file readers open; none for an in-memory database, whose reads go through
    /// the writer.
    path: Option<PathBuf>,
}

/// What a read handler sees: a committed state, through the writer's connection or a reader's.
pub struct View<'a> {
    pub store: &'a Store,
    pub books: &'a Books,
    pub market: &'a Market,
    pub settings: &'a Settings,
    pub backtests: &'a super::backtests::Live,
}

impl View<'_> {
    pub fn book(&self, account_id: i64) -> Book {
        self.books
            .get(&account_id)
            .map(|b| (**b).clone())
            .unwrap_or_else(|| Book::new(self.settings.initial_equity))
    }
}

impl Core {
    pub fn open(
        db: &DbLocation,
        settings: Settings,
        now: DateTime<Utc>,
    ) -> Result<Opened, keys::KeyError> {
        let mut store = match db {
            DbLocation::File(path) => Store::open(path)?,
            DbLocation::Memory => Store::open_in_memory()?,
        };
        let mut new_keys = Vec::new();
        let demo = match store.accounts()?.into_iter().next() {
            Some(account) => account,
            None => {
                let account = store.create_account(
                    &keys::random_messenger_id(),
                    &keys::random_wallet(),
                    settings.initial_equity,
                    now,
                )?;
                for scope in Scope::ALL {
                    let key = keys::create_key(
                        &mut store,
                        Some(&account.messenger_id),
                        scope,
                        "created with the database",
                        now,
                    )?;
                    new_keys.push((scope, key));
                }
                account
            }
        };
        let books: Arc<Books> = Arc::new(
            store
                .load_books()?
                .into_iter()
                .map(|(id, book)| (id, Arc::new(book)))
                .collect(),
        );
        let next_oid = store
            .meta("next_oid")?
            .and_then(|v| v.parse().ok())
            .unwrap_or(FIRST_OID);
        let last_sync = store
            .meta("last_sync")?
            .and_then(|v| DateTime::parse_from_rfc3339(&v).ok())
            .map(|t| t.with_timezone(&Utc))
            .unwrap_or(now);
        let published = Arc::new(RwLock::new(Published {
            books: books.clone(),
            last_sync,
        }));
        let core = Core {
            store,
            books,
            market: Arc::new(Market::new(settings.seed)),
            settings,
            next_oid,
            last_sync,
            jobs: None,
            signal_wake: Default::default(),
            destination_added: Default::default(),
            backtests: Default::default(),
            last_snapshot: now,
            published,
            path: match db {
                DbLocation::File(path) => Some(path.clone()),
                DbLocation::Memory => None,
            },
        };
        Ok((core, demo, new_keys))
    }

    pub fn fees(&self) -> FeeConfig {
        FeeConfig {
            taker_fee_rate: self.settings.taker_fee_rate,
            maker_fee_rate: self.settings.maker_fee_rate,
            slippage_bps: self.settings.slippage_bps,
        }
    }

    /// Hands out the next order id. It is persisted with the mutation that uses it (see
    /// [`Core::commit`]), so ids are never reused after a restart.
    pub fn take_oid(&mut self) -> u64 {
        let oid = self.next_oid;
        self.next_oid += 1;
        oid
    }

    pub fn book(&self, account_id: i64) -> Book {
        self.view().book(account_id)
    }

    pub fn view(&self) -> View<'_> {
        View {
            store: &self.store,
            books: &self.books,
            market: &self.market,
            settings: &self.settings,
            backtests: &self.backtests,
        }
    }

    /// Makes the committed books and sync point what readers see. Called after every commit that
    /// changed either, so a reader never sees state that is not in the database.
    fn publish(&self) {
        let mut published = self.published.write().unwrap_or_else(|e| e.into_inner());
        *published = Published {
            books: self.books.clone(),
            last_sync: self.last_sync,
        };
    }

    /// Commits a changed book (and its fills) together with `extra` writes in one transaction, then
    /// makes it the in-memory book. Nothing changes in memory if anything fails.
    pub fn commit<T>(
        &mut self,
        account_id: i64,
        book: Book,
        fills: &[Fill],
        now: DateTime<Utc>,
        extra: impl FnOnce(&rusqlite::Transaction) -> Result<T, AppError>,
    ) -> Result<T, AppError> {
        let market = self.market.clone();
        let (next_oid, last_sync) = (self.next_oid, self.last_sync);
        let tx = self.store.conn.transaction()?;
        let out = extra(&tx)?;
        Store::save_book(&tx, account_id, &book)?;
        Store::insert_fills(&tx, account_id, fills)?;
        if !fills.is_empty() {
            Store::insert_equity_snapshot(&tx, account_id, now, book.equity(&market, now))?;
        }
        Store::set_meta(&tx, "next_oid", &next_oid.to_string())?;
        Store::set_meta(&tx, "last_sync", &last_sync.to_rfc3339())?;
        tx.commit()?;
        Arc::make_mut(&mut self.books).insert(account_id, Arc::new(book));
        self.publish();
        Ok(out)
    }

    /// Whether a [`Core::sync`] at `now` would only publish: no book holds a position or an order
    /// the feed could fill or trigger, and no equity snapshot is due. It then touches no database.
    fn quiet(&self, now: DateTime<Utc>) -> bool {
        now - self.last_snapshot < SNAPSHOT_EVERY
            && self
                .books
                .values()
                .all(|b| b.positions.is_empty() && b.orders.is_empty())
    }

    /// Advances every book along the price feed to `now`: resting limits fill, TP/SL triggers fire,
    /// positions past their liquidation price are liquidated — each at the moment the path crossed.
    pub fn sync(&mut self, now: DateTime<Utc>) -> DbResult<()> {
        if now <= self.last_sync {
            return Ok(());
        }
        let from = self.last_sync;
        let fees = self.fees();
        let mut changed: Vec<(i64, Book, Vec<Fill>)> = Vec::new();
        for (id, book) in self.books.iter() {
            if book.positions.is_empty() && book.orders.is_empty() {
                continue;
            }
            let mut next = Book::clone(book);
            let fills = next.sync(&self.market, &fees, from, now);
            // Fills of a platform order's resting or trigger orders owe the builder fee.
            for fill in &fills {
                next.cash -= super::builder_fee::later_fill_fee(&self.store.conn, fill)?;
            }
            if !fills.is_empty() || next != **book {
                changed.push((*id, next, fills));
            }
        }
        self.last_sync = now;
        let snapshot = now - self.last_snapshot >= SNAPSHOT_EVERY;
        if changed.is_empty() && !snapshot {
            // Nothing to write, but readers learn that the venue is current up to `now`.
            self.publish();
            return Ok(());
        }
        let tx = self.store.conn.transaction()?;
        for (id, book, fills) in &changed {
            Store::save_book(&tx, *id, book)?;
            Store::insert_fills(&tx, *id, fills)?;
        }
        if snapshot {
            for (id, book) in self.books.iter() {
                let book = changed
                    .iter()
                    .find(|(cid, _, _)| cid == id)
                    .map(|(_, b, _)| b)
                    .unwrap_or(book.as_ref());
                Store::insert_equity_snapshot(&tx, *id, now, book.equity(&self.market, now))?;
            }
        }
        Store::set_meta(&tx, "last_sync", &now.to_rfc3339())?;
        tx.commit()?;
        if snapshot {
            self.last_snapshot = now;
        }
        let books = Arc::make_mut(&mut self.books);
        for (id, book, _) in changed {
            books.insert(id, Arc::new(book));
        }
        self.publish();
        Ok(())
    }
}

/// How many read-only connections serve reads. Reads are short; a few more than the cores keeps
/// every core busy while one reader waits on the disk.
fn reader_count() -> usize {
    std::thread::available_parallelism().map_or(2, |n| n.get()) + 2
}

pub struct Shared {
    core: Mutex<Core>,
    published: Arc<RwLock<Published>>,
    /// Read-only connections; empty for an in-memory database.
    readers: Vec<Mutex<Store>>,
    market: Arc<Market>,
    next_reader: std::sync::atomic::AtomicUsize,
    pub clock: Arc<dyn Clock>,
    pub settings: Settings,
    /// Discovery answers, computed in the background (outside the core lock).
    pub discovery: Arc<super::discovery::Cache>,
    /// The same notifier as [`Core::signal_wake`], for the delivery loop to wait on.
    pub signal_wake: Arc<Notify>,
    /// The same notifier as [`Core::destination_added`], for the live strategies' loop.
    pub destination_added: Arc<Notify>,
    backtests: Arc<super::backtests::Live>,
    /// Research runs whose lead task runs in this sandbox.
    pub research: super::research::live::Runs,
}

impl Shared {
    /// The simulated market, for reads that need no account (the candles route).
    pub fn market(&self) -> &Market {
        &self.market
    }

    pub fn new(core: Core, clock: Arc<dyn Clock>, settings: Settings) -> DbResult<Self> {
        let readers = match &core.path {
            Some(path) => (0..reader_count())
                .map(|_| Store::open_reader(path).map(Mutex::new))
                .collect::<DbResult<_>>()?,
            None => Vec::new(),
        };
        Ok(Shared {
            published: core.published.clone(),
            readers,
            market: core.market.clone(),
            next_reader: Default::default(),
            signal_wake: core.signal_wake.clone(),
            destination_added: core.destination_added.clone(),
            backtests: core.backtests.clone(),
            core: Mutex::new(core),
            clock,
            settings,
            discovery: Default::default(),
            research: Default::default(),
        })
    }

    /// Runs `f` on a committed view without the writer's lock; `arg` back when this read must go
    /// through the writer: the database is in memory, or the venue is two ticks or more behind
    /// the clock (a test clock jumped, or the tick is a whole period late), so resting orders and
    /// triggers the feed crossed since would be missing from the answer.
    ///
    /// Two ticks, not one: the venue is one tick behind just before every tick, so at one a
    /// tick that ran a few milliseconds late sent every read of those milliseconds through the
    /// writer, one at a time, and under load the tick itself queued behind them on the blocking
    /// pool.
    ///
    /// `f` runs on the calling task's thread, not the blocking pool: a read is an indexed lookup
    /// or two in SQLite's page cache, shorter than the hand-off to another thread, and there are
    /// more readers than runtime workers, so a worker never waits for one.
    pub fn read_view<A, T>(&self, arg: A, f: fn(&View, DateTime<Utc>, A) -> T) -> Result<T, A> {
        if self.readers.is_empty() {
            return Err(arg);
        }
        let now = self.clock.now();
        let published = self
            .published
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        let lag = Duration::milliseconds(2 * self.settings.tick_ms as i64);
        if now - published.last_sync >= lag {
            return Err(arg);
        }
        let store = self.reader();
        let view = View {
            store: &store,
            books: &published.books,
            market: &self.market,
            settings: &self.settings,
            backtests: &self.backtests,
        };
        Ok(f(&view, now, arg))
    }

    /// A free reader if there is one, else the next in turn.
    fn reader(&self) -> std::sync::MutexGuard<'_, Store> {
        use std::sync::atomic::Ordering;
        let start = self.next_reader.fetch_add(1, Ordering::Relaxed);
        let n = self.readers.len();
        for i in 0..n {
            if let Ok(guard) = self.readers[(start + i) % n].try_lock() {
                return guard;
            }
        }
        self.readers[start % n]
            .lock()
            .unwrap_or_else(|e| e.into_inner())
    }

    /// If backtest `id` is running here, waits at most `max` for it to end.
    pub async fn wait_while_backtest_runs(&self, id: &str, max: std::time::Duration) {
        let deadline = tokio::time::Instant::now() + max;
        self.backtests.wait_while_running(id, deadline).await;
    }

    /// Runs `f` under the lock on a blocking thread, with the sandbox's current time.
    pub async fn run_raw<T, F>(self: &Arc<Self>, f: F) -> Result<T, tokio::task::JoinError>
    where
        T: Send + 'static,
        F: FnOnce(&mut Core, DateTime<Utc>) -> T + Send + 'static,
    {
        let shared = self.clone();
        // What runs under the lock logs in the caller's span (its request id).
        let span = tracing::Span::current();
        tokio::task::spawn_blocking(move || {
            let _in = span.enter();
            // A panic in one request must not take the sandbox down with a poisoned lock: the state
            // it left is what SQLite committed, which the in-memory books mirror only on success.
            let mut core = shared.core.lock().unwrap_or_else(|e| e.into_inner());
            let now = shared.clock.now();
            f(&mut core, now)
        })
        .await
    }
}

/// Advances the venue even when nobody is calling, so triggers fire on time.
pub async fn tick_forever(shared: Arc<Shared>) {
    let mut interval =
        tokio::time::interval(std::time::Duration::from_millis(shared.settings.tick_ms));
    interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        interval.tick().await;
        // A venue with nothing to fill or trigger is brought up to now here, in microseconds and
        // with no database: handing that to the blocking pool cost an idle desk two thread
        // wakeups a second. Anything more, or a lock held, goes there as before.
        // A panic under the lock left the state SQLite committed, as `run_raw` reads it too.
        let synced = {
            let free = match shared.core.try_lock() {
                Ok(core) => Some(core),
                Err(std::sync::TryLockError::Poisoned(p)) => Some(p.into_inner()),
                Err(std::sync::TryLockError::WouldBlock) => None,
            };
            free.and_then(|mut core| {
                let now = shared.clock.now();
                core.quiet(now).then(|| core.sync(now))
            })
        };
        match synced {
            Some(Ok(())) => continue,
            Some(Err(e)) => {
                tracing::warn!("venue sync failed: {e}");
                continue;
            }
            None => {}
        }
        match shared.run_raw(|core, now| core.sync(now)).await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => tracing::warn!("venue sync failed: {e}"),
            Err(e) => tracing::error!("venue sync task failed: {e}"),
        }
    }
}
