//! The venue's state per account: cash, positions, resting orders, fills and equity snapshots.

use super::{DbResult, Store, parse_ts, ts};
use crate::sandbox::venue::Exchange;
use crate::sandbox::venue::exchange::{Book, Fill, Order, OrderKind, Position};
use chrono::{DateTime, Utc};
use rusqlite::{Connection, OptionalExtension, params};
use std::collections::HashMap;

impl Store {
    // ---- venue state ------------------------------------------------------------------------------

    pub fn load_books(&self) -> DbResult<HashMap<i64, Book>> {
        let mut books: HashMap<i64, Book> = HashMap::new();
        let mut stmt = self.conn.prepare("SELECT account_id, cash FROM balances")?;
        for row in stmt.query_map([], |r| Ok((r.get::<_, i64>(0)?, r.get::<_, f64>(1)?)))? {
            let (id, cash) = row?;
            books.insert(id, Book::new(cash));
        }
        let mut stmt = self.conn.prepare(
            "SELECT account_id, exchange, coin, szi, entry_px, leverage, margin, opened_at
             FROM positions ORDER BY account_id, exchange, coin",
        )?;
        let rows = stmt.query_map([], |r| {
            let exchange: String = r.get(1)?;
            Ok((
                r.get::<_, i64>(0)?,
                Position {
                    exchange: Exchange::parse(&exchange).unwrap_or(Exchange::Venue),
                    coin: r.get(2)?,
                    szi: r.get(3)?,
                    entry_px: r.get(4)?,
                    leverage: r.get::<_, i64>(5)? as u32,
                    margin: r.get(6)?,
                    opened_at: parse_ts(r.get(7)?),
                },
            ))
        })?;
        for row in rows {
            let (id, p) = row?;
            books
                .entry(id)
                .or_insert_with(|| Book::new(0.0))
                .positions
                .push(p);
        }
        let mut stmt = self.conn.prepare(
            "SELECT account_id, oid, exchange, coin, is_buy, limit_px, sz, orig_sz, kind,
                    trigger_px, reduce_only, is_position_tpsl, leverage, timestamp
             FROM orders ORDER BY oid",
        )?;
        let rows = stmt.query_map([], |r| {
            let exchange: String = r.get(2)?;
            let kind: String = r.get(8)?;
            Ok((
                r.get::<_, i64>(0)?,
                Order {
                    oid: r.get::<_, i64>(1)? as u64,
                    exchange: Exchange::parse(&exchange).unwrap_or(Exchange::Venue),
                    coin: r.get(3)?,
                    is_buy: r.get(4)?,
                    limit_px: r.get(5)?,
                    sz: r.get(6)?,
                    orig_sz: r.get(7)?,
                    kind: order_kind_from_str(&kind),
                    trigger_px: r.get(9)?,
                    reduce_only: r.get(10)?,
                    is_position_tpsl: r.get(11)?,
                    leverage: r.get::<_, i64>(12)? as u32,
                    timestamp: parse_ts(r.get(13)?),
                },
            ))
        })?;
        for row in rows {
            let (id, o) = row?;
            books
                .entry(id)
                .or_insert_with(|| Book::new(0.0))
                .orders
                .push(o);
        }
        Ok(books)
    }

    /// Writes an account's whole book: balance, positions and resting orders.
    pub fn save_book(tx: &Connection, account_id: i64, book: &Book) -> DbResult<()> {
        tx.execute(
            "INSERT INTO balances (account_id, cash) VALUES (?1, ?2)
             ON CONFLICT(account_id) DO UPDATE SET cash = excluded.cash",
            params![account_id, book.cash],
        )?;
        tx.execute("DELETE FROM positions WHERE account_id = ?1", [account_id])?;
        let mut ins = tx.prepare_cached(
            "INSERT INTO positions (account_id, exchange, coin, szi, entry_px, leverage, margin,
                                    opened_at)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
        )?;
        for p in &book.positions {
            ins.execute(params![
                account_id,
                p.exchange.as_str(),
                p.coin,
                p.szi,
                p.entry_px,
                p.leverage as i64,
                p.margin,
                ts(p.opened_at)
            ])?;
        }
        tx.execute("DELETE FROM orders WHERE account_id = ?1", [account_id])?;
        let mut ins = tx.prepare_cached(
            "INSERT INTO orders (oid, account_id, exchange, coin, is_buy, limit_px, sz, orig_sz,
                                 kind, trigger_px, reduce_only, is_position_tpsl, leverage,
                                 timestamp)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14)",
        )?;
        for o in &book.orders {
            ins.execute(params![
                o.oid as i64,
                account_id,
                o.exchange.as_str(),
                o.coin,
                o.is_buy,
                o.limit_px,
                o.sz,
                o.orig_sz,
                order_kind_str(o.kind),
                o.trigger_px,
                o.reduce_only,
                o.is_position_tpsl,
                o.leverage as i64,
                ts(o.timestamp)
            ])?;
        }
        Ok(())
    }

    pub fn insert_fills(tx: &Connection, account_id: i64, fills: &[Fill]) -> DbResult<()> {
        let mut ins = tx.prepare_cached(
            "INSERT INTO fills (account_id, oid, exchange, coin, is_buy, px, sz, fee, closed_pnl,
                                dir, cause, time)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)",
        )?;
        for f in fills {
            ins.execute(params![
                account_id,
                f.oid as i64,
                f.exchange.as_str(),
                f.coin,
                f.is_buy,
                f.px,
                f.sz,
                f.fee,
                f.closed_pnl,
                f.dir,
                format!("{:?}", f.cause),
                ts(f.time)
            ])?;
        }
        if fills.is_empty() {
            return Ok(());
        }
        let closed: f64 = fills.iter().map(|f| f.closed_pnl).sum();
        let fees: f64 = fills.iter().map(|f| f.fee).sum();
        tx.prepare_cached(
            "INSERT INTO fill_totals (account_id, fills, closed_pnl, fees) VALUES (?1, ?2, ?3, ?4)
             ON CONFLICT(account_id) DO UPDATE SET fills = fills + excluded.fills,
                 closed_pnl = closed_pnl + excluded.closed_pnl, fees = fees + excluded.fees",
        )?
        .execute(params![account_id, fills.len() as i64, closed, fees])?;
        Ok(())
    }

    /// Realized PnL (closed PnL net of fees) of the account over its whole life, from the totals
    /// [`Store::insert_fills`] keeps.
    pub fn realized(&self, account_id: i64) -> DbResult<f64> {
        Ok(self
            .conn
            .prepare_cached("SELECT closed_pnl - fees FROM fill_totals WHERE account_id = ?1")?
            .query_row([account_id], |r| r.get(0))
            .optional()?
            .unwrap_or(0.0))
    }

    /// The same sum from the fills themselves; what the totals must always equal.
    pub fn realized_from_fills(&self, account_id: i64) -> DbResult<f64> {
        self.conn.query_row(
            "SELECT COALESCE(SUM(closed_pnl - fee), 0) FROM fills WHERE account_id = ?1",
            [account_id],
            |r| r.get(0),
        )
    }

    pub fn insert_equity_snapshot(
        tx: &Connection,
        account_id: i64,
        now: DateTime<Utc>,
        equity: f64,
    ) -> DbResult<()> {
        tx.execute(
            "INSERT OR REPLACE INTO equity_snapshots (account_id, time, equity) VALUES (?1, ?2, ?3)",
            params![account_id, ts(now), equity],
        )?;
        Ok(())
    }

    /// Equity at `t`: the last snapshot at or before `t`, or the first one after it when the
    /// account did not exist yet.
    pub fn equity_at(&self, account_id: i64, t: DateTime<Utc>) -> DbResult<Option<f64>> {
        let before: Option<f64> = self
            .conn
            .prepare_cached(
                "SELECT equity FROM equity_snapshots WHERE account_id = ?1 AND time <= ?2
                 ORDER BY time DESC LIMIT 1",
            )?
            .query_row(params![account_id, ts(t)], |r| r.get(0))
            .optional()?;
        if before.is_some() {
            return Ok(before);
        }
        self.conn
            .query_row(
                "SELECT equity FROM equity_snapshots WHERE account_id = ?1 ORDER BY time LIMIT 1",
                [account_id],
                |r| r.get(0),
            )
            .optional()
    }
}

fn order_kind_str(k: OrderKind) -> &'static str {
    match k {
        OrderKind::Limit => "limit",
        OrderKind::StopMarket => "stop_market",
        OrderKind::TakeProfitMarket => "take_profit_market",
    }
}

fn order_kind_from_str(s: &str) -> OrderKind {
    match s {
        "stop_market" => OrderKind::StopMarket,
        "take_profit_market" => OrderKind::TakeProfitMarket,
        _ => OrderKind::Limit,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sandbox::venue::exchange::FillCause;

    fn fill(closed_pnl: f64, fee: f64, t: DateTime<Utc>) -> Fill {
        Fill {
            oid: 1,
            exchange: Exchange::ALL[0],
            coin: "BTC".into(),
            is_buy: true,
            px: 100.0,
            sz: 1.0,
            fee,
            closed_pnl,
            time: t,
            dir: "Close Long".into(),
            cause: FillCause::Market,
        }
    }

    #[test]
    fn totals_follow_every_fill_and_the_migration_backfills_them() {
        let mut s = Store::open_in_memory().unwrap();
        let now = Utc::now();
        let a = s.create_account("m1", "0xabc", 1000.0, now).unwrap();
        let tx = s.conn.transaction().unwrap();
        Store::insert_fills(&tx, a.id, &[fill(10.0, 1.0, now), fill(-4.0, 0.5, now)]).unwrap();
        tx.commit().unwrap();
        Store::insert_fills(&s.conn, a.id, &[fill(2.0, 0.25, now)]).unwrap();
        assert_eq!(s.realized(a.id).unwrap(), 6.25);
        assert_eq!(s.realized_from_fills(a.id).unwrap(), 6.25);

        // A database from before the totals: the migration computes them from its fills.
        s.conn
            .execute_batch("DROP TABLE fill_totals; PRAGMA user_version = 5;")
            .unwrap();
        s.migrate().unwrap();
        assert_eq!(s.realized(a.id).unwrap(), 6.25);
        assert_eq!(s.realized(a.id + 1).unwrap(), 0.0);
    }
}
