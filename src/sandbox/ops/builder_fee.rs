//! `approve_builder_fee_payload` and `approve_builder_fee` (`/api/v1/venue/builder-fee`).

use super::{AppError, Call, Reply};
use crate::api::model::BuilderFeeApproval;
use crate::sandbox::builder_fee;
use crate::sandbox::core::Core;

pub fn approve_builder_fee_payload(core: &mut Core, call: &Call) -> Result<Reply, AppError> {
    let c = &call.caller;
    let body = builder_fee::payload(
        core,
        c.account_id,
        &c.wallet,
        call.query("venueWallet"),
        call.now,
    )?;
    Reply::ok(body)
}

pub fn approve_builder_fee(core: &mut Core, call: &Call) -> Result<Reply, AppError> {
    let req: BuilderFeeApproval = call.json()?;
    let c = &call.caller;
    Reply::ok(builder_fee::approve(
        core,
        c.account_id,
        &c.wallet,
        &req,
        call.now,
    )?)
}
