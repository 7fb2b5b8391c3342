//! The sandbox's state and its one lock. Every request runs to completion under the lock on a
//! blocking thread: SQLite writes are synchronous, and serializing requests makes every operation
//! trivially atomic — throughput a paper venue does not need is traded for obviously correct state.

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
use std::sync::{Arc, Mutex};
use tokio::sync::Notify;

/// Equity is snapshotted at most this often (sandbox time), for period PnL.
const SNAPSHOT_EVERY: Duration = Duration::minutes(5);
/// The first oid handed out on a new database; venue oids are large integers.
const FIRST_OID: u64 = 100_000_000;

/// A core just opened, the demo account, and the keys created with a new database.
pub type Opened = (Core, AccountRow, Vec<(Scope, Secret)>);

pub struct Core {
    pub store: Store,
    pub books: HashMap<i64, Book>,
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
    last_snapshot: DateTime<Utc>,
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
        let books = store.load_books()?;
        let next_oid = store
            .meta("next_oid")?
            .and_then(|v| v.parse().ok())
            .unwrap_or(FIRST_OID);
        let last_sync = store
            .meta("last_sync")?
            .and_then(|v| DateTime::parse_from_rfc3339(&v).ok())
            .map(|t| t.with_timezone(&Utc))
            .unwrap_or(now);
        let core = Core {
            store,
            books,
            market: Arc::new(Market::new(settings.seed)),
            settings,
            next_oid,
            last_sync,
            jobs: None,
            signal_wake: Default::default(),
            last_snapshot: now,
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
        self.books
            .get(&account_id)
            .cloned()
            .unwrap_or_else(|| Book::new(self.settings.initial_equity))
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
        self.books.insert(account_id, book);
        Ok(out)
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
        for (id, book) in &self.books {
            if book.positions.is_empty() && book.orders.is_empty() {
                continue;
            }
            let mut next = book.clone();
            let fills = next.sync(&self.market, &fees, from, now);
            // Fills of a platform order's resting or trigger orders owe the builder fee.
            for fill in &fills {
                next.cash -= super::builder_fee::later_fill_fee(&self.store.conn, fill)?;
            }
            if !fills.is_empty() || next != *book {
                changed.push((*id, next, fills));
            }
        }
        self.last_sync = now;
        let snapshot = now - self.last_snapshot >= SNAPSHOT_EVERY;
        if changed.is_empty() && !snapshot {
            return Ok(());
        }
        let tx = self.store.conn.transaction()?;
        for (id, book, fills) in &changed {
            Store::save_book(&tx, *id, book)?;
            Store::insert_fills(&tx, *id, fills)?;
        }
        if snapshot {
            for (id, book) in &self.books {
                let book = changed
                    .iter()
                    .find(|(cid, _, _)| cid == id)
                    .map(|(_, b, _)| b)
                    .unwrap_or(book);
                Store::insert_equity_snapshot(&tx, *id, now, book.equity(&self.market, now))?;
            }
        }
        Store::set_meta(&tx, "last_sync", &now.to_rfc3339())?;
        tx.commit()?;
        if snapshot {
            self.last_snapshot = now;
        }
        for (id, book, _) in changed {
            self.books.insert(id, book);
        }
        Ok(())
    }
}

pub struct Shared {
    core: Mutex<Core>,
    pub clock: Arc<dyn Clock>,
    pub settings: Settings,
    /// Discovery answers, computed in the background (outside the core lock).
    pub discovery: Arc<super::discovery::Cache>,
    /// The same notifier as [`Core::signal_wake`], for the delivery loop to wait on.
    pub signal_wake: Arc<Notify>,
    /// Research runs whose lead task runs in this sandbox.
    pub research: super::research::live::Runs,
}

impl Shared {
    pub fn new(core: Core, clock: Arc<dyn Clock>, settings: Settings) -> Self {
        Shared {
            signal_wake: core.signal_wake.clone(),
            core: Mutex::new(core),
            clock,
            settings,
            discovery: Default::default(),
            research: Default::default(),
        }
    }

    /// Runs `f` under the lock on a blocking thread, with the sandbox's current time.
    pub async fn run_raw<T, F>(self: &Arc<Self>, f: F) -> Result<T, tokio::task::JoinError>
    where
        T: Send + 'static,
        F: FnOnce(&mut Core, DateTime<Utc>) -> T + Send + 'static,
    {
        let shared = self.clone();
        tokio::task::spawn_blocking(move || {
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
        match shared.run_raw(|core, now| core.sync(now)).await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => tracing::warn!("venue sync failed: {e}"),
            Err(e) => tracing::error!("venue sync task failed: {e}"),
        }
    }
}
