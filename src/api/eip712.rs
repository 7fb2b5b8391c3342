//! EIP-712 typed structured data hashing and secp256k1 signing/recovery.
//!
//! Everything here may be fed attacker-controlled JSON and strings (typed data
//! posted by clients, signatures in request bodies and headers), so every parse
//! returns an [`Eip712Error`] instead of panicking, and recursion is bounded.
//!
//! Supported field types: `string`, `bytes`, `bool`, `address`, `uint8`..`uint256`,
//! `int8`..`int256`, `bytes1`..`bytes32`, references to struct types declared in
//! `types`, and arrays (`T[]`, `T[k]`) of any of those.
//!
//! Integer values are accepted as JSON numbers (only when they are exact
//! integers: serde_json turns anything past `u64`/`i64` into a float, which
//! would silently lose precision), decimal strings, or `0x`-hex strings. They
//! are held as 32-byte big-endian words, which is exactly the ABI encoding, so
//! no bignum crate is needed.

use std::collections::{BTreeMap, BTreeSet};

use k256::ecdsa::{RecoveryId, Signature, SigningKey, VerifyingKey};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use sha3::{Digest, Keccak256};

/// `signatureChainId` the venue expects alongside user-signed actions on its
/// testnet (Arbitrum Sepolia, 421614 = 0x66eee).
pub const SIGNATURE_CHAIN_ID: &str = "0x66eee";
/// The same chain id as a number, used as the EIP-712 domain `chainId`.
pub const SIGNATURE_CHAIN_ID_NUM: u64 = 0x66eee;
/// Primary type of the approve-builder-fee user-signed action. The colon is
/// part of the type name: the venue's SDK hashes it verbatim.
pub const APPROVE_BUILDER_FEE_TYPE: &str = "HyperliquidTransaction:ApproveBuilderFee";
/// `hyperliquidChain` value for the testnet venue the sandbox imitates.
pub const HYPERLIQUID_CHAIN: &str = "Testnet";

/// Name of the domain struct type, fixed by EIP-712.
const DOMAIN_TYPE: &str = "EIP712Domain";
/// Deepest struct/array nesting we encode. serde_json already caps parse depth
/// at 128, but typed data may also be built in code; a small bound keeps the
/// recursion's stack use trivially safe.
const MAX_DEPTH: usize = 32;
/// secp256k1 group order divided by two (rounded down). Signatures with `s`
/// above this are the "high-s" malleated twin of a low-s signature.
const SECP256K1_HALF_ORDER: [u8; 32] = [
    0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
    0x5d, 0x57, 0x6e, 0x73, 0x57, 0xa4, 0x50, 0x1d, 0xdf, 0xe9, 0x2f, 0x46, 0x68, 0x1b, 0x20, 0xa0,
];

/// Errors from encoding typed data or handling signatures.
///
/// Messages name the offending field path (`message.from.wallet`) but never
/// echo the attacker's value back, so they are safe to return to clients.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Eip712Error {
    #[error("unknown type `{0}`")]
    UnknownType(String),
    #[error("invalid type declaration: {0}")]
    InvalidTypeDeclaration(String),
    #[error("missing field `{0}`")]
    MissingField(String),
    #[error("invalid value for `{path}` (type {ty}): {reason}")]
    InvalidValue {
        path: String,
        ty: String,
        reason: String,
    },
    #[error("typed data nested deeper than {MAX_DEPTH} levels at `{0}`")]
    TooDeep(String),
    #[error("invalid address: {0}")]
    InvalidAddress(&'static str),
    #[error("invalid signature: {0}")]
    InvalidSignature(&'static str),
    #[error("signature has a high s value (not accepted here)")]
    HighS,
    #[error("could not recover a public key from the signature")]
    RecoveryFailed,
}

/// One member of a struct type.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Field {
    pub name: String,
    #[serde(rename = "type")]
    pub r#type: String,
}

impl Field {
    pub fn new(name: &str, ty: &str) -> Self {
        Field {
            name: name.to_owned(),
            r#type: ty.to_owned(),
        }
    }
}

/// Typed data as passed to `eth_signTypedData_v4`.
///
/// `types` may or may not contain `EIP712Domain`; when it does not, the domain
/// type is derived from the keys present in `domain` (the way ethers/viem do).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TypedData {
    pub types: BTreeMap<String, Vec<Field>>,
    pub primary_type: String,
    pub domain: Value,
    pub message: Value,
}

/// Type map alias used by the free functions.
pub type Types = BTreeMap<String, Vec<Field>>;

/// keccak256 of `data`.
pub fn keccak256(data: &[u8]) -> [u8; 32] {
    Keccak256::digest(data).into()
}

/// `keccak256(0x1901 ‖ domainSeparator ‖ hashStruct(primaryType, message))`,
/// the digest a wallet signs for this typed data.
pub fn signing_hash(td: &TypedData) -> Result<[u8; 32], Eip712Error> {
    let domain = domain_separator(td)?;
    let message = hash_struct(&td.types, &td.primary_type, &td.message)?;
    let mut buf = [0u8; 66];
    buf[0] = 0x19;
    buf[1] = 0x01;
    buf[2..34].copy_from_slice(&domain);
    buf[34..66].copy_from_slice(&message);
    Ok(keccak256(&buf))
}

/// `hashStruct(EIP712Domain, domain)`.
pub fn domain_separator(td: &TypedData) -> Result<[u8; 32], Eip712Error> {
    if td.types.contains_key(DOMAIN_TYPE) {
        return hash_struct_at(&td.types, DOMAIN_TYPE, &td.domain, "domain", 0);
    }
    // No explicit domain type: derive it from the keys present, in the order
    // EIP-712 lists them. Unknown keys are an error rather than silently
    // unsigned data.
    let obj = td
        .domain
        .as_object()
        .ok_or_else(|| invalid("domain", DOMAIN_TYPE, "expected an object"))?;
    const KNOWN: [(&str, &str); 5] = [
        ("name", "string"),
        ("version", "string"),
        ("chainId", "uint256"),
        ("verifyingContract", "address"),
        ("salt", "bytes32"),
    ];
    if let Some(k) = obj.keys().find(|k| !KNOWN.iter().any(|(n, _)| n == k)) {
        return Err(Eip712Error::InvalidTypeDeclaration(format!(
            "domain has key `{}` but types has no EIP712Domain",
            truncate(k)
        )));
    }
    let fields = KNOWN
        .iter()
        .filter(|(n, _)| obj.contains_key(*n))
        .map(|(n, t)| Field::new(n, t))
        .collect();
    let mut types = td.types.clone();
    types.insert(DOMAIN_TYPE.to_owned(), fields);
    hash_struct_at(&types, DOMAIN_TYPE, &td.domain, "domain", 0)
}

/// `hashStruct(s) = keccak256(typeHash ‖ encodeData(s))` for a value of struct
/// type `type_name`.
pub fn hash_struct(types: &Types, type_name: &str, value: &Value) -> Result<[u8; 32], Eip712Error> {
    hash_struct_at(types, type_name, value, "message", 0)
}

/// `keccak256(encodeType(type_name))`.
pub fn type_hash(types: &Types, type_name: &str) -> Result<[u8; 32], Eip712Error> {
    Ok(keccak256(encode_type(types, type_name)?.as_bytes()))
}

/// `encodeType`: the primary type's signature followed by those of every
/// struct type it references (transitively), the latter sorted by name.
pub fn encode_type(types: &Types, type_name: &str) -> Result<String, Eip712Error> {
    let primary = lookup(types, type_name)?;
    // Iterative walk so a self-referencing or cyclic type cannot recurse forever.
    let mut deps = BTreeSet::new();
    let mut stack = vec![(type_name, primary)];
    while let Some((name, fields)) = stack.pop() {
        check_name(name, "type name")?;
        let mut seen = BTreeSet::new();
        for f in fields {
            check_name(&f.name, "field name")?;
            if !seen.insert(f.name.as_str()) {
                return Err(Eip712Error::InvalidTypeDeclaration(format!(
                    "type `{}` declares field `{}` twice",
                    truncate(name),
                    truncate(&f.name)
                )));
            }
            let base = base_type(&f.r#type);
            if is_atomic_or_dynamic(base) {
                validate_array_suffix(&f.r#type)?;
                continue;
            }
            validate_array_suffix(&f.r#type)?;
            let dep_fields = lookup(types, base)?;
            if base != type_name && deps.insert(base) {
                stack.push((base, dep_fields));
            }
        }
    }
    let mut out = String::new();
    write_type(&mut out, type_name, primary);
    for d in deps {
        // `lookup` succeeded for every dep above.
        if let Some(fields) = types.get(d) {
            write_type(&mut out, d, fields);
        }
    }
    Ok(out)
}

fn write_type(out: &mut String, name: &str, fields: &[Field]) {
    out.push_str(name);
    out.push('(');
    for (i, f) in fields.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push_str(&f.r#type);
        out.push(' ');
        out.push_str(&f.name);
    }
    out.push(')');
}

fn lookup<'a>(types: &'a Types, name: &str) -> Result<&'a [Field], Eip712Error> {
    types
        .get(name)
        .map(Vec::as_slice)
        .ok_or_else(|| Eip712Error::UnknownType(truncate(name)))
}

/// Names end up concatenated into the type string, so characters that are
/// part of its grammar would make two different declarations hash alike.
fn check_name(name: &str, what: &str) -> Result<(), Eip712Error> {
    let bad = name.is_empty()
        || name
            .chars()
            .any(|c| c.is_whitespace() || c.is_control() || "(),[]".contains(c));
    if bad {
        return Err(Eip712Error::InvalidTypeDeclaration(format!(
            "invalid {what} `{}`",
            truncate(name)
        )));
    }
    Ok(())
}

/// The element type with every `[..]` suffix removed.
fn base_type(ty: &str) -> &str {
    ty.find('[').map_or(ty, |i| &ty[..i])
}

fn validate_array_suffix(ty: &str) -> Result<(), Eip712Error> {
    let mut rest = &ty[base_type(ty).len()..];
    while !rest.is_empty() {
        let close = rest
            .find(']')
            .filter(|_| rest.starts_with('['))
            .ok_or_else(|| {
                Eip712Error::InvalidTypeDeclaration(format!("bad array type `{}`", truncate(ty)))
            })?;
        let len = &rest[1..close];
        if !len.is_empty() && parse_canonical_usize(len).is_none() {
            return Err(Eip712Error::InvalidTypeDeclaration(format!(
                "bad array length in `{}`",
                truncate(ty)
            )));
        }
        rest = &rest[close + 1..];
    }
    Ok(())
}

fn is_atomic_or_dynamic(ty: &str) -> bool {
    matches!(ty, "string" | "bytes" | "bool" | "address")
        || int_bits(ty, "uint").is_some()
        || int_bits(ty, "int").is_some()
        || fixed_bytes_len(ty).is_some()
}

/// `uintN`/`intN` width, for N in 8..=256 step 8 written canonically.
fn int_bits(ty: &str, prefix: &str) -> Option<u32> {
    let n = parse_canonical_usize(ty.strip_prefix(prefix)?)?;
    (n % 8 == 0 && (8..=256).contains(&n)).then_some(n as u32)
}

/// `bytesN` length, N in 1..=32.
fn fixed_bytes_len(ty: &str) -> Option<usize> {
    let n = parse_canonical_usize(ty.strip_prefix("bytes")?)?;
    (1..=32).contains(&n).then_some(n)
}

/// Decimal without sign or leading zeros, so `uint08` is not `uint8`.
fn parse_canonical_usize(s: &str) -> Option<usize> {
    if s.is_empty() || s.len() > 6 || (s.len() > 1 && s.starts_with('0')) {
        return None;
    }
    if !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

fn hash_struct_at(
    types: &Types,
    type_name: &str,
    value: &Value,
    path: &str,
    depth: usize,
) -> Result<[u8; 32], Eip712Error> {
    if depth > MAX_DEPTH {
        return Err(Eip712Error::TooDeep(truncate(path)));
    }
    let fields = lookup(types, type_name)?;
    let obj = value
        .as_object()
        .ok_or_else(|| invalid(path, type_name, "expected an object"))?;
    let mut buf = Vec::with_capacity(32 * (fields.len() + 1));
    buf.extend_from_slice(&type_hash(types, type_name)?);
    for f in fields {
        let field_path = format!("{path}.{}", f.name);
        // Missing members are an error rather than zero: a wallet would refuse
        // to sign such data, and a silent default could hide a client bug.
        let v = obj
            .get(&f.name)
            .ok_or_else(|| Eip712Error::MissingField(truncate(&field_path)))?;
        buf.extend_from_slice(&encode_value(types, &f.r#type, v, &field_path, depth + 1)?);
    }
    Ok(keccak256(&buf))
}

/// `encodeData` of one member: always one 32-byte word.
fn encode_value(
    types: &Types,
    ty: &str,
    value: &Value,
    path: &str,
    depth: usize,
) -> Result<[u8; 32], Eip712Error> {
    if depth > MAX_DEPTH {
        return Err(Eip712Error::TooDeep(truncate(path)));
    }
    if let Some(inner_end) = ty.strip_suffix(']').and_then(|t| t.rfind('[')) {
        let inner = &ty[..inner_end];
        let len_spec = &ty[inner_end + 1..ty.len() - 1];
        let items = value
            .as_array()
            .ok_or_else(|| invalid(path, ty, "expected an array"))?;
        if !len_spec.is_empty() {
            let want = parse_canonical_usize(len_spec).ok_or_else(|| {
                Eip712Error::InvalidTypeDeclaration(format!("bad array type `{}`", truncate(ty)))
            })?;
            if items.len() != want {
                return Err(invalid(path, ty, "wrong array length"));
            }
        }
        let mut buf = Vec::with_capacity(32 * items.len());
        for (i, item) in items.iter().enumerate() {
            buf.extend_from_slice(&encode_value(
                types,
                inner,
                item,
                &format!("{path}[{i}]"),
                depth + 1,
            )?);
        }
        return Ok(keccak256(&buf));
    }
    match ty {
        "string" => {
            let s = value
                .as_str()
                .ok_or_else(|| invalid(path, ty, "expected a string"))?;
            Ok(keccak256(s.as_bytes()))
        }
        "bytes" => {
            let s = value
                .as_str()
                .ok_or_else(|| invalid(path, ty, "expected a 0x-hex string"))?;
            let bytes = decode_0x_hex(s).map_err(|r| invalid(path, ty, r))?;
            Ok(keccak256(&bytes))
        }
        "bool" => {
            let b = value
                .as_bool()
                .ok_or_else(|| invalid(path, ty, "expected true or false"))?;
            let mut w = [0u8; 32];
            w[31] = u8::from(b);
            Ok(w)
        }
        "address" => {
            let s = value
                .as_str()
                .ok_or_else(|| invalid(path, ty, "expected a 0x-hex address string"))?;
            let a = parse_address(s).map_err(|e| invalid(path, ty, &e.to_string()))?;
            let mut w = [0u8; 32];
            w[12..].copy_from_slice(&a);
            Ok(w)
        }
        _ => {
            if let Some(bits) = int_bits(ty, "uint") {
                let (neg, mag) = parse_integer(value).map_err(|r| invalid(path, ty, r))?;
                if neg {
                    return Err(invalid(path, ty, "negative value for an unsigned type"));
                }
                if !fits_unsigned(&mag, bits) {
                    return Err(invalid(path, ty, "value out of range"));
                }
                Ok(mag)
            } else if let Some(bits) = int_bits(ty, "int") {
                let (neg, mag) = parse_integer(value).map_err(|r| invalid(path, ty, r))?;
                encode_signed(neg, mag, bits).ok_or_else(|| invalid(path, ty, "value out of range"))
            } else if let Some(n) = fixed_bytes_len(ty) {
                let s = value
                    .as_str()
                    .ok_or_else(|| invalid(path, ty, "expected a 0x-hex string"))?;
                let bytes = decode_0x_hex(s).map_err(|r| invalid(path, ty, r))?;
                // Exact length, as ethers requires: padding a short value
                // would let two different inputs sign the same word.
                if bytes.len() != n {
                    return Err(invalid(path, ty, "wrong byte length"));
                }
                let mut w = [0u8; 32];
                w[..n].copy_from_slice(&bytes);
                Ok(w)
            } else {
                hash_struct_at(types, ty, value, path, depth)
            }
        }
    }
}

fn invalid(path: &str, ty: &str, reason: &str) -> Eip712Error {
    Eip712Error::InvalidValue {
        path: truncate(path),
        ty: truncate(ty),
        reason: reason.to_owned(),
    }
}

/// Caps strings copied into error messages so a hostile key cannot make a
/// multi-megabyte error.
fn truncate(s: &str) -> String {
    const MAX: usize = 80;
    if s.len() <= MAX {
        return s.to_owned();
    }
    let mut end = MAX;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &s[..end])
}

fn decode_0x_hex(s: &str) -> Result<Vec<u8>, &'static str> {
    let digits = strip_0x(s).ok_or("expected a 0x prefix")?;
    hex::decode(digits).map_err(|_| "not an even-length hex string")
}

fn strip_0x(s: &str) -> Option<&str> {
    s.strip_prefix("0x").or_else(|| s.strip_prefix("0X"))
}

/// Parses an integer given as a JSON number, a decimal string or a 0x-hex
/// string (either optionally preceded by `-`) into sign and 256-bit magnitude.
fn parse_integer(value: &Value) -> Result<(bool, [u8; 32]), &'static str> {
    match value {
        Value::Number(n) => {
            if let Some(u) = n.as_u64() {
                Ok((false, u256_from_u64(u)))
            } else if let Some(i) = n.as_i64() {
                Ok((i < 0, u256_from_u64(i.unsigned_abs())))
            } else {
                Err("not an integer (pass large numbers as decimal strings)")
            }
        }
        Value::String(s) => {
            let (neg, body) = match s.strip_prefix('-') {
                Some(rest) => (true, rest),
                None => (false, s.as_str()),
            };
            let mag = parse_uint_str(body)?;
            // "-0" is zero, not a negative number.
            Ok((neg && mag != [0u8; 32], mag))
        }
        _ => Err("expected a number or a numeric string"),
    }
}

fn u256_from_u64(u: u64) -> [u8; 32] {
    let mut w = [0u8; 32];
    w[24..].copy_from_slice(&u.to_be_bytes());
    w
}

/// Unsigned decimal or 0x-hex string to a 32-byte big-endian word.
pub fn parse_uint_str(s: &str) -> Result<[u8; 32], &'static str> {
    if let Some(digits) = strip_0x(s) {
        parse_hex_word(digits)
    } else {
        parse_decimal_word(s)
    }
}

/// Hex digits (any length, any case) to a left-padded 32-byte word.
fn parse_hex_word(digits: &str) -> Result<[u8; 32], &'static str> {
    if digits.is_empty() {
        return Err("empty hex number");
    }
    if !digits.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err("not a hex number");
    }
    let significant = digits.trim_start_matches('0');
    if significant.len() > 64 {
        return Err("number does not fit in 256 bits");
    }
    let mut w = [0u8; 32];
    for (i, c) in significant.bytes().rev().enumerate() {
        // Cannot fail: checked is_ascii_hexdigit above.
        let nibble = (c as char).to_digit(16).unwrap_or(0) as u8;
        w[31 - i / 2] |= nibble << ((i % 2) * 4);
    }
    Ok(w)
}

/// Decimal digits to a 32-byte word by repeated multiply-by-ten-and-add, with
/// overflow detection on every step.
fn parse_decimal_word(s: &str) -> Result<[u8; 32], &'static str> {
    if s.is_empty() {
        return Err("empty number");
    }
    let mut w = [0u8; 32];
    for c in s.bytes() {
        if !c.is_ascii_digit() {
            return Err("not a decimal number");
        }
        let mut carry = u32::from(c - b'0');
        for b in w.iter_mut().rev() {
            let v = u32::from(*b) * 10 + carry;
            *b = v as u8;
            carry = v >> 8;
        }
        if carry != 0 {
            return Err("number does not fit in 256 bits");
        }
    }
    Ok(w)
}

/// Canonical decimal rendering of a 32-byte big-endian word.
pub fn format_uint_word(w: &[u8; 32]) -> String {
    let mut n = *w;
    let mut digits = Vec::new();
    while n != [0u8; 32] {
        // Long division by ten, most significant byte first.
        let mut rem = 0u32;
        for b in n.iter_mut() {
            let cur = (rem << 8) | u32::from(*b);
            *b = (cur / 10) as u8;
            rem = cur % 10;
        }
        digits.push(b'0' + rem as u8);
    }
    if digits.is_empty() {
        return "0".to_owned();
    }
    digits.reverse();
    String::from_utf8(digits).unwrap_or_default()
}

fn fits_unsigned(mag: &[u8; 32], bits: u32) -> bool {
    let zero_bytes = (256 - bits as usize) / 8;
    mag[..zero_bytes].iter().all(|&b| b == 0)
}

/// Two's-complement 256-bit encoding of a signed intN, or None if out of
/// range (−2^(N−1) ..= 2^(N−1)−1).
fn encode_signed(neg: bool, mag: [u8; 32], bits: u32) -> Option<[u8; 32]> {
    let mut limit = [0u8; 32]; // 2^(bits-1)
    let bit = bits as usize - 1;
    limit[31 - bit / 8] = 1 << (bit % 8);
    let in_range = if neg { mag <= limit } else { mag < limit };
    if !in_range {
        return None;
    }
    if !neg {
        return Some(mag);
    }
    let mut w = mag;
    for b in w.iter_mut() {
        *b = !*b;
    }
    for b in w.iter_mut().rev() {
        let (v, overflow) = b.overflowing_add(1);
        *b = v;
        if !overflow {
            break;
        }
    }
    Some(w)
}

/// Parses `0x` + 40 hex digits, any case. The EIP-55 checksum is not
/// enforced: the venue's SDKs send lowercase addresses, and the signature
/// binds the address bytes, so mixed case adds no security here.
pub fn parse_address(s: &str) -> Result<[u8; 20], Eip712Error> {
    let digits = strip_0x(s).ok_or(Eip712Error::InvalidAddress("expected a 0x prefix"))?;
    if digits.len() != 40 {
        return Err(Eip712Error::InvalidAddress("expected 40 hex digits"));
    }
    let mut out = [0u8; 20];
    hex::decode_to_slice(digits, &mut out).map_err(|_| Eip712Error::InvalidAddress("not hex"))?;
    Ok(out)
}

/// EIP-55 mixed-case checksummed form of an address.
pub fn format_address(addr: [u8; 20]) -> String {
    let lower = hex::encode(addr);
    let hash = keccak256(lower.as_bytes());
    let mut out = String::with_capacity(42);
    out.push_str("0x");
    for (i, c) in lower.chars().enumerate() {
        let nibble = (hash[i / 2] >> (if i % 2 == 0 { 4 } else { 0 })) & 0x0f;
        out.push(if nibble >= 8 {
            c.to_ascii_uppercase()
        } else {
            c
        });
    }
    out
}

/// Ethereum address of a public key: last 20 bytes of keccak256 of the
/// uncompressed point without its 0x04 prefix.
pub fn address_of_verifying_key(key: &VerifyingKey) -> [u8; 20] {
    let point = key.to_sec1_point(false);
    let bytes = point.as_bytes();
    let hash = keccak256(bytes.get(1..).unwrap_or_default());
    let mut out = [0u8; 20];
    out.copy_from_slice(&hash[12..]);
    out
}

/// Ethereum address of a private key.
pub fn address_of(key: &SigningKey) -> [u8; 20] {
    address_of_verifying_key(key.verifying_key())
}

/// Signs a 32-byte digest; returns `0x` ‖ r ‖ s ‖ v (65 bytes, v = 27/28),
/// the form `eth_signTypedData_v4` returns. k256 always emits low-s.
pub fn sign_digest(key: &SigningKey, digest: &[u8; 32]) -> String {
    let (sig, recid) = key.sign_prehash_recoverable(digest);
    let mut out = [0u8; 65];
    out[..64].copy_from_slice(&sig.to_bytes());
    out[64] = 27 + u8::from(recid.is_y_odd());
    format!("0x{}", hex::encode(out))
}

/// A signature as clients send it: one 65-byte hex string (r ‖ s ‖ v), or the
/// split form the venue's SDKs produce (`{r, s, v}`; r and s are hex numbers,
/// possibly without leading zeros, v is 27/28 or 0/1).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum SignatureInput {
    Hex(String),
    Rsv { r: String, s: String, v: u64 },
}

/// Recovers the signer's address from a signature over `digest`.
///
/// High-s signatures are accepted and normalized (s → n − s, flipping the
/// recovery parity), which recovers the same key. This matches the
/// `ecrecover` precompile and the common wallet libraries, which do not
/// enforce low-s for typed-data signatures, so a venue client whose signer
/// emits high-s still works; malleability is harmless here because no
/// signature is used as an identifier (replay is stopped by the nonce). Use
/// [`recover_address_low_s`] where the eventual consumer (e.g. USDC's
/// `ecrecover` wrapper) rejects high-s.
pub fn recover_address(digest: &[u8; 32], sig: &SignatureInput) -> Result<[u8; 20], Eip712Error> {
    recover_inner(digest, sig, true)
}

/// Like [`recover_address`] but refuses high-s signatures with
/// [`Eip712Error::HighS`], mirroring OpenZeppelin/Circle `ECRecover`.
pub fn recover_address_low_s(
    digest: &[u8; 32],
    sig: &SignatureInput,
) -> Result<[u8; 20], Eip712Error> {
    recover_inner(digest, sig, false)
}

fn recover_inner(
    digest: &[u8; 32],
    sig: &SignatureInput,
    allow_high_s: bool,
) -> Result<[u8; 20], Eip712Error> {
    let (r, s, v) = split_signature(sig)?;
    let mut y_odd = match v {
        27 | 0 => false,
        28 | 1 => true,
        _ => return Err(Eip712Error::InvalidSignature("v must be 27, 28, 0 or 1")),
    };
    let mut rs = [0u8; 64];
    rs[..32].copy_from_slice(&r);
    rs[32..].copy_from_slice(&s);
    // from_slice rejects r or s equal to zero or not below the group order.
    let mut signature = Signature::from_slice(&rs)
        .map_err(|_| Eip712Error::InvalidSignature("r or s out of range"))?;
    if s > SECP256K1_HALF_ORDER {
        if !allow_high_s {
            return Err(Eip712Error::HighS);
        }
        signature = signature.normalize_s();
        y_odd = !y_odd;
    }
    let recid = RecoveryId::new(y_odd, false);
    let key = VerifyingKey::recover_from_prehash(digest, &signature, recid)
        .map_err(|_| Eip712Error::RecoveryFailed)?;
    Ok(address_of_verifying_key(&key))
}

fn split_signature(sig: &SignatureInput) -> Result<([u8; 32], [u8; 32], u64), Eip712Error> {
    match sig {
        SignatureInput::Hex(h) => {
            let digits =
                strip_0x(h).ok_or(Eip712Error::InvalidSignature("expected a 0x prefix"))?;
            if digits.len() != 130 {
                return Err(Eip712Error::InvalidSignature("expected 65 bytes of hex"));
            }
            let mut raw = [0u8; 65];
            hex::decode_to_slice(digits, &mut raw)
                .map_err(|_| Eip712Error::InvalidSignature("not hex"))?;
            let mut r = [0u8; 32];
            let mut s = [0u8; 32];
            r.copy_from_slice(&raw[..32]);
            s.copy_from_slice(&raw[32..64]);
            Ok((r, s, u64::from(raw[64])))
        }
        SignatureInput::Rsv { r, s, v } => {
            // The venue's Python SDK renders r and s with minimal hex (leading
            // zeros dropped, possibly odd length), so parse them as numbers.
            let word = |x: &str| {
                parse_hex_word(strip_0x(x).unwrap_or(x)).map_err(|_| {
                    Eip712Error::InvalidSignature("r and s must be hex numbers below 2^256")
                })
            };
            Ok((word(r)?, word(s)?, *v))
        }
    }
}

/// The `EIP712Domain` type of a domain with name, version, chainId and verifyingContract (the
/// venue's and USDC's).
pub fn domain_fields() -> Vec<Field> {
    vec![
        Field::new("name", "string"),
        Field::new("version", "string"),
        Field::new("chainId", "uint256"),
        Field::new("verifyingContract", "address"),
    ]
}

/// Typed data for the venue's approve-builder-fee user-signed action, exactly
/// as its SDK builds it (domain "HyperliquidSignTransaction", chain 421614,
/// zero verifying contract).
///
/// `builder` is stored lowercased but otherwise unchecked; an invalid address
/// makes [`signing_hash`] fail, so callers should validate it first.
pub fn approve_builder_fee_typed_data(max_fee_rate: &str, builder: &str, nonce: u64) -> TypedData {
    approve_builder_fee_typed_data_for_chain(max_fee_rate, builder, nonce, SIGNATURE_CHAIN_ID_NUM)
}

/// Same, with the domain `chainId` taken from a client's `signatureChainId`
/// (see [`parse_signature_chain_id`]): the venue lets a wallet sign on the
/// chain it is connected to and rebuilds the domain from that field.
pub fn approve_builder_fee_typed_data_for_chain(
    max_fee_rate: &str,
    builder: &str,
    nonce: u64,
    chain_id: u64,
) -> TypedData {
    let mut types = Types::new();
    types.insert(DOMAIN_TYPE.to_owned(), domain_fields());
    types.insert(
        APPROVE_BUILDER_FEE_TYPE.to_owned(),
        vec![
            Field::new("hyperliquidChain", "string"),
            Field::new("maxFeeRate", "string"),
            Field::new("builder", "address"),
            Field::new("nonce", "uint64"),
        ],
    );
    TypedData {
        types,
        primary_type: APPROVE_BUILDER_FEE_TYPE.to_owned(),
        domain: json!({
            "name": "HyperliquidSignTransaction",
            "version": "1",
            "chainId": chain_id,
            "verifyingContract": "0x0000000000000000000000000000000000000000",
        }),
        message: json!({
            "hyperliquidChain": HYPERLIQUID_CHAIN,
            "maxFeeRate": max_fee_rate,
            "builder": builder.to_ascii_lowercase(),
            "nonce": nonce,
        }),
    }
}

/// Parses a `signatureChainId` (`0x`-hex, e.g. [`SIGNATURE_CHAIN_ID`]) into
/// a chain id. Zero and values past `u64` are refused.
pub fn parse_signature_chain_id(s: &str) -> Result<u64, Eip712Error> {
    let bad = || invalid("signatureChainId", "string", "expected a 0x-hex chain id");
    let digits = strip_0x(s).ok_or_else(bad)?;
    if digits.is_empty() || digits.len() > 16 {
        return Err(bad());
    }
    match u64::from_str_radix(digits, 16) {
        Ok(id) if id > 0 && digits.bytes().all(|b| b.is_ascii_hexdigit()) => Ok(id),
        _ => Err(bad()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn h32(s: &str) -> [u8; 32] {
        let mut out = [0u8; 32];
        hex::decode_to_slice(s.trim_start_matches("0x"), &mut out).unwrap();
        out
    }

    fn mail() -> TypedData {
        serde_json::from_value(json!({
            "types": {
                "EIP712Domain": [
                    {"name": "name", "type": "string"},
                    {"name": "version", "type": "string"},
                    {"name": "chainId", "type": "uint256"},
                    {"name": "verifyingContract", "type": "address"}
                ],
                "Person": [
                    {"name": "name", "type": "string"},
                    {"name": "wallet", "type": "address"}
                ],
                "Mail": [
                    {"name": "from", "type": "Person"},
                    {"name": "to", "type": "Person"},
                    {"name": "contents", "type": "string"}
                ]
            },
            "primaryType": "Mail",
            "domain": {
                "name": "Ether Mail",
                "version": "1",
                "chainId": 1,
                "verifyingContract": "0xCcCCccccCCCCcCCCCCCcCcCccCcCCCcCcccccccC"
            },
            "message": {
                "from": {"name": "Cow", "wallet": "0xCD2a3d9F938E13CD947Ec05AbC7FE734Df8DD826"},
                "to": {"name": "Bob", "wallet": "0xbBbBBBBbbBBBbbbBbbBbbbbBBbBbbbbBbBbbBBbB"},
                "contents": "Hello, Bob!"
            }
        }))
        .unwrap()
    }

    fn cow_key() -> SigningKey {
        SigningKey::from_slice(&keccak256(b"cow")).unwrap()
    }

    const MAIL_R: &str = "0x4355c47d63924e8a72e509b65029052eb6c299d53a04e167c5775fd466751c9d";
    const MAIL_S: &str = "0x07299936d304c153f6443dfa05f40ff007d72911b6f72307f996231605b91562";

    #[test]
    fn mail_vector_intermediate_values() {
        let td = mail();
        assert_eq!(
            encode_type(&td.types, "Mail").unwrap(),
            "Mail(Person from,Person to,string contents)Person(string name,address wallet)"
        );
        assert_eq!(
            type_hash(&td.types, "Mail").unwrap(),
            h32("a0cedeb2dc280ba39b857546d74f5549c3a1d7bdc2dd96bf881f76108e23dac2")
        );
        assert_eq!(
            domain_separator(&td).unwrap(),
            h32("f2cee375fa42b42143804025fc449deafd50cc031ca257e0b194a650a912090f")
        );
        assert_eq!(
            hash_struct(&td.types, "Mail", &td.message).unwrap(),
            h32("c52c0ee5d84264471806290a3f2c4cecfc5490626bf912d01f240d7a274b371e")
        );
    }

    #[test]
    fn mail_vector_signing_hash_and_signature() {
        let td = mail();
        let digest = signing_hash(&td).unwrap();
        assert_eq!(
            digest,
            h32("be609aee343fb3c4b28e1df9e632fca64fcfaede20f02e86244efddf30957bd2")
        );
        let key = cow_key();
        let cow = parse_address("0xCD2a3d9F938E13CD947Ec05AbC7FE734Df8DD826").unwrap();
        assert_eq!(address_of(&key), cow);
        assert_eq!(
            format_address(cow),
            "0xCD2a3d9F938E13CD947Ec05AbC7FE734Df8DD826"
        );

        let rsv = SignatureInput::Rsv {
            r: MAIL_R.into(),
            s: MAIL_S.into(),
            v: 28,
        };
        assert_eq!(recover_address(&digest, &rsv).unwrap(), cow);
        assert_eq!(recover_address_low_s(&digest, &rsv).unwrap(), cow);
        let joined = format!("{MAIL_R}{}1c", &MAIL_S[2..]);
        assert_eq!(
            recover_address(&digest, &SignatureInput::Hex(joined.clone())).unwrap(),
            cow
        );
        // RFC 6979 is deterministic, and the spec's example used it too.
        assert_eq!(sign_digest(&key, &digest), joined);
    }

    #[test]
    fn domain_type_derived_when_absent() {
        let mut td = mail();
        td.types.remove("EIP712Domain");
        assert_eq!(
            signing_hash(&td).unwrap(),
            h32("be609aee343fb3c4b28e1df9e632fca64fcfaede20f02e86244efddf30957bd2")
        );
        td.domain["extra"] = json!("x");
        assert!(matches!(
            signing_hash(&td),
            Err(Eip712Error::InvalidTypeDeclaration(_))
        ));
    }

    #[test]
    fn high_s_is_normalized_or_refused() {
        let td = mail();
        let digest = signing_hash(&td).unwrap();
        // n - s, with the parity flipped, is the malleated twin.
        let n = h32("fffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141");
        let s = h32(MAIL_S);
        let mut high = [0u8; 32];
        let mut borrow = 0i16;
        for i in (0..32).rev() {
            let d = i16::from(n[i]) - i16::from(s[i]) - borrow;
            borrow = i16::from(d < 0);
            high[i] = (d + 256 * borrow) as u8;
        }
        let sig = SignatureInput::Rsv {
            r: MAIL_R.into(),
            s: format!("0x{}", hex::encode(high)),
            v: 27,
        };
        let cow = parse_address("0xcd2a3d9f938e13cd947ec05abc7fe734df8dd826").unwrap();
        assert_eq!(recover_address(&digest, &sig).unwrap(), cow);
        assert_eq!(
            recover_address_low_s(&digest, &sig),
            Err(Eip712Error::HighS)
        );
    }

    #[test]
    fn builder_fee_type_string_matches_sdk() {
        let td =
            approve_builder_fee_typed_data("0.1%", "0x1234567890abcdef1234567890abcdef12345678", 1);
        assert_eq!(
            encode_type(&td.types, &td.primary_type).unwrap(),
            "HyperliquidTransaction:ApproveBuilderFee(string hyperliquidChain,string maxFeeRate,address builder,uint64 nonce)"
        );
        assert_eq!(
            encode_type(&td.types, "EIP712Domain").unwrap(),
            "EIP712Domain(string name,string version,uint256 chainId,address verifyingContract)"
        );
        let v = serde_json::to_value(&td).unwrap();
        assert_eq!(v["primaryType"], APPROVE_BUILDER_FEE_TYPE);
        assert_eq!(v["domain"]["chainId"], 421614);
        assert_eq!(parse_signature_chain_id(SIGNATURE_CHAIN_ID), Ok(421614));
        assert_eq!(parse_signature_chain_id("0xA4B1"), Ok(42161));
        for bad in [
            "",
            "0x",
            "66eee",
            "0x0",
            "0x+1",
            "0x10000000000000000",
            "0xzz",
        ] {
            assert!(parse_signature_chain_id(bad).is_err(), "{bad}");
        }
        let other = approve_builder_fee_typed_data_for_chain(
            "0.1%",
            "0x1234567890abcdef1234567890abcdef12345678",
            1,
            42161,
        );
        assert_ne!(signing_hash(&other).unwrap(), signing_hash(&td).unwrap());
        // Serde round trip keeps the hash.
        let back: TypedData = serde_json::from_value(v).unwrap();
        assert_eq!(signing_hash(&back).unwrap(), signing_hash(&td).unwrap());
    }

    #[test]
    fn builder_fee_round_trip_both_signature_forms() {
        let key = SigningKey::from_slice(&keccak256(b"agentdesk test wallet")).unwrap();
        let me = address_of(&key);
        let td = approve_builder_fee_typed_data(
            "0.1%",
            "0xAbCdEf0123456789aBcDeF0123456789AbCdEf01",
            1_700_000_000_123,
        );
        let digest = signing_hash(&td).unwrap();
        let sig = sign_digest(&key, &digest);
        assert_eq!(sig.len(), 132);
        assert_eq!(
            recover_address(&digest, &SignatureInput::Hex(sig.clone())).unwrap(),
            me
        );

        // Split form, as the venue SDK sends it: minimal hex, v 27/28, and
        // also v 0/1.
        let raw = hex::decode(&sig[2..]).unwrap();
        let minimal = |b: &[u8]| {
            let h = hex::encode(b);
            let t = h.trim_start_matches('0');
            format!("0x{}", if t.is_empty() { "0" } else { t })
        };
        for v in [u64::from(raw[64]), u64::from(raw[64] - 27)] {
            let rsv: SignatureInput = serde_json::from_value(json!({
                "r": minimal(&raw[..32]), "s": minimal(&raw[32..64]), "v": v
            }))
            .unwrap();
            assert_eq!(recover_address(&digest, &rsv).unwrap(), me);
        }
        // The untagged enum also takes the plain string.
        let hex_in: SignatureInput = serde_json::from_value(json!(sig)).unwrap();
        assert_eq!(hex_in, SignatureInput::Hex(sig.clone()));

        // A different nonce or fee gives a different digest, so the same
        // signature recovers someone else.
        let other = signing_hash(&approve_builder_fee_typed_data(
            "0.2%",
            "0xabcdef0123456789abcdef0123456789abcdef01",
            1_700_000_000_123,
        ))
        .unwrap();
        assert_ne!(
            recover_address(&other, &SignatureInput::Hex(sig)).ok(),
            Some(me)
        );
    }

    #[test]
    fn malformed_signatures_are_errors() {
        let d = [7u8; 32];
        let bad = [
            SignatureInput::Hex("0x1234".into()),
            SignatureInput::Hex("".into()),
            SignatureInput::Hex(format!("0x{}", "zz".repeat(65))),
            SignatureInput::Hex("11".repeat(65)), // no 0x prefix
            SignatureInput::Hex(format!("0x{}1d", "11".repeat(64))), // v = 29
            SignatureInput::Hex(format!("0x{}1b", "00".repeat(64))), // r = s = 0
            SignatureInput::Hex(format!("0x{}1b", "ff".repeat(64))), // >= n
            SignatureInput::Hex("0xé".repeat(70)),
            SignatureInput::Rsv {
                r: "0x1".into(),
                s: "0x1".into(),
                v: 35,
            },
            SignatureInput::Rsv {
                r: "xyz".into(),
                s: "0x1".into(),
                v: 27,
            },
            SignatureInput::Rsv {
                r: format!("0x1{}", "0".repeat(64)),
                s: "0x1".into(),
                v: 27,
            },
            SignatureInput::Rsv {
                r: "".into(),
                s: "0x1".into(),
                v: 27,
            },
            SignatureInput::Rsv {
                r: "0x".into(),
                s: "0x1".into(),
                v: 27,
            },
        ];
        for sig in &bad {
            assert!(recover_address(&d, sig).is_err(), "{sig:?}");
        }
        // A JSON shape matching neither variant is a serde error, not a panic.
        assert!(serde_json::from_value::<SignatureInput>(json!({"r": "0x1", "v": 27})).is_err());
        assert!(serde_json::from_value::<SignatureInput>(json!(12)).is_err());
        assert!(
            serde_json::from_value::<SignatureInput>(json!({"r": "0x1", "s": "0x1", "v": -1}))
                .is_err()
        );
    }

    #[test]
    fn wrong_message_types_are_errors() {
        let base =
            approve_builder_fee_typed_data("0.1%", "0x1234567890abcdef1234567890abcdef12345678", 5);
        let cases: Vec<(&str, Value)> = vec![
            ("builder", json!("0x1234")),
            ("builder", json!(12)),
            (
                "builder",
                json!("1234567890abcdef1234567890abcdef1234567890"),
            ),
            ("nonce", json!(-1)),
            ("nonce", json!(1.5)),
            ("nonce", json!("18446744073709551616")), // 2^64 does not fit uint64
            ("nonce", json!("12a")),
            ("nonce", json!("")),
            ("nonce", json!(null)),
            ("nonce", json!([1])),
            ("maxFeeRate", json!(1)),
            ("hyperliquidChain", json!({"a": 1})),
        ];
        for (field, value) in cases {
            let mut td = base.clone();
            td.message[field] = value.clone();
            let err = signing_hash(&td).unwrap_err();
            assert!(
                matches!(&err, Eip712Error::InvalidValue { path, .. } if path == &format!("message.{field}")),
                "{field}={value}: {err}"
            );
        }
        let mut td = base.clone();
        td.message.as_object_mut().unwrap().remove("nonce");
        assert_eq!(
            signing_hash(&td),
            Err(Eip712Error::MissingField("message.nonce".into()))
        );
        let mut td = base.clone();
        td.message = json!("not an object");
        assert!(signing_hash(&td).is_err());
        let mut td = base.clone();
        td.primary_type = "Nope".into();
        assert_eq!(
            signing_hash(&td),
            Err(Eip712Error::UnknownType("Nope".into()))
        );
        let mut td = base;
        td.types.get_mut(APPROVE_BUILDER_FEE_TYPE).unwrap()[0].r#type = "uint7".into();
        assert!(matches!(
            signing_hash(&td),
            Err(Eip712Error::UnknownType(_))
        ));
    }

    #[test]
    fn integers_in_all_forms() {
        let mut types = Types::new();
        types.insert(
            "T".into(),
            vec![
                Field::new("u", "uint256"),
                Field::new("i", "int8"),
                Field::new("b", "bytes4"),
                Field::new("f", "bool"),
                Field::new("d", "bytes"),
                Field::new("a", "uint16[]"),
            ],
        );
        let h = |v: Value| hash_struct(&types, "T", &v);
        let one =
            h(json!({"u": 255, "i": -1, "b": "0x01020304", "f": true, "d": "0x", "a": [1, 2]}))
                .unwrap();
        let same = h(json!({"u": "0xff", "i": "-1", "b": "0x01020304", "f": true, "d": "0x", "a": ["1", "0x2"]})).unwrap();
        assert_eq!(one, same);
        let also = h(
            json!({"u": "255", "i": "-0x1", "b": "0x01020304", "f": true, "d": "0X", "a": [1, 2]}),
        )
        .unwrap();
        assert_eq!(one, also);
        // Max uint256 accepted in both notations; one more overflows.
        let max_dec =
            "115792089237316195423570985008687907853269984665640564039457584007913129639935";
        assert_eq!(parse_uint_str(max_dec).unwrap(), [0xff; 32]);
        assert_eq!(
            parse_uint_str(&format!("0x{}", "f".repeat(64))).unwrap(),
            [0xff; 32]
        );
        assert!(
            parse_uint_str(
                "115792089237316195423570985008687907853269984665640564039457584007913129639936"
            )
            .is_err()
        );
        assert!(parse_uint_str(&format!("0x1{}", "0".repeat(64))).is_err());
        assert_eq!(
            parse_uint_str(&format!("0x{}1", "0".repeat(100))).unwrap(),
            u256_from_u64(1)
        );
        assert_eq!(format_uint_word(&[0xff; 32]), max_dec);
        assert_eq!(format_uint_word(&[0; 32]), "0");
        assert_eq!(format_uint_word(&u256_from_u64(1_000_000)), "1000000");
        // int8 bounds.
        let ok = |i: Value| {
            h(json!({"u": 0, "i": i, "b": "0x00000000", "f": false, "d": "0x00", "a": []}))
        };
        assert!(ok(json!(127)).is_ok());
        assert!(ok(json!(-128)).is_ok());
        assert!(ok(json!(128)).is_err());
        assert!(ok(json!(-129)).is_err());
        assert_eq!(encode_signed(true, u256_from_u64(1), 8), Some([0xff; 32]));
        assert_eq!(
            encode_signed(true, u256_from_u64(128), 8).map(|w| w[31]),
            Some(0x80)
        );
        // bytes4 must be exactly four bytes.
        let b4 = |b: &str| h(json!({"u": 0, "i": 0, "b": b, "f": false, "d": "0x", "a": []}));
        assert!(b4("0x010203").is_err());
        assert!(b4("0x0102030405").is_err());
        assert!(b4("01020304").is_err());
    }

    #[test]
    fn cyclic_and_deep_types_do_not_overflow() {
        let mut types = Types::new();
        types.insert(
            "Node".into(),
            vec![Field::new("next", "Node[]"), Field::new("v", "uint8")],
        );
        assert_eq!(
            encode_type(&types, "Node").unwrap(),
            "Node(Node[] next,uint8 v)"
        );
        let mut v = json!({"next": [], "v": 1});
        for _ in 0..(MAX_DEPTH + 5) {
            v = json!({"next": [v], "v": 1});
        }
        assert!(matches!(
            hash_struct(&types, "Node", &v),
            Err(Eip712Error::TooDeep(_))
        ));
        let shallow = json!({"next": [{"next": [], "v": 2}], "v": 1});
        assert!(hash_struct(&types, "Node", &shallow).is_ok());
        // Grammar characters in names are refused.
        let mut bad = Types::new();
        bad.insert("A(".into(), vec![Field::new("x", "uint8")]);
        assert!(encode_type(&bad, "A(").is_err());
        let mut bad = Types::new();
        bad.insert("A".into(), vec![Field::new("x y", "uint8")]);
        assert!(encode_type(&bad, "A").is_err());
        let mut bad = Types::new();
        bad.insert(
            "A".into(),
            vec![Field::new("x", "uint8[2"), Field::new("y", "uint8")],
        );
        assert!(encode_type(&bad, "A").is_err());
    }

    #[test]
    fn address_parsing_and_checksum() {
        // EIP-55's own examples.
        for a in [
            "0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed",
            "0xfB6916095ca1df60bB79Ce92cE3Ea74c37c5d359",
            "0xdbF03B407c01E7cD3CBea99509d93f8DDDC8C6FB",
            "0xD1220A0cf47c7B9Be7A2E6BA89F429762e7b9aDb",
        ] {
            assert_eq!(format_address(parse_address(&a.to_lowercase()).unwrap()), a);
        }
        for bad in [
            "",
            "0x",
            "0x123",
            "5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed",
            "0xgaAeb6053F3E94C9b9A09f33669435E7Ef1BeAed",
            "0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed00",
        ] {
            assert!(parse_address(bad).is_err(), "{bad}");
        }
    }

    /// Cheap fuzzing without proptest: random strings and random JSON shapes
    /// through every parser. The assertion is simply "no panic".
    #[test]
    fn fuzz_parsers_do_not_panic() {
        use rand::RngExt;
        let mut rng = rand::rng();
        let alphabet: Vec<char> = "0123456789abcdefABCDEFxX-_. {}[]\":,é\u{0}"
            .chars()
            .collect();
        let td =
            approve_builder_fee_typed_data("0.1%", "0x1234567890abcdef1234567890abcdef12345678", 5);
        for _ in 0..3000 {
            let len = rng.random_range(0..140);
            let s: String = (0..len)
                .map(|_| alphabet[rng.random_range(0..alphabet.len())])
                .collect();
            let prefixed = format!("0x{s}");
            let _ = parse_address(&s);
            let _ = parse_address(&prefixed);
            let _ = parse_uint_str(&s);
            let _ = recover_address(&[1; 32], &SignatureInput::Hex(prefixed.clone()));
            let _ = recover_address(
                &[1; 32],
                &SignatureInput::Rsv {
                    r: s.clone(),
                    s: prefixed.clone(),
                    v: rng.random_range(0..40),
                },
            );
            let _ = serde_json::from_str::<TypedData>(&s).map(|t| signing_hash(&t));
            let _ = serde_json::from_str::<SignatureInput>(&s);
            let mut t = td.clone();
            let field =
                ["builder", "nonce", "maxFeeRate", "hyperliquidChain"][rng.random_range(0..4)];
            t.message[field] = serde_json::from_str(&s).unwrap_or(Value::String(s.clone()));
            let _ = signing_hash(&t);
            let mut t = td.clone();
            if let Some(f) = t.types.get_mut(APPROVE_BUILDER_FEE_TYPE) {
                f[rng.random_range(0..4)].r#type = s.clone();
            }
            let _ = signing_hash(&t);
        }
        // Random valid-length signatures: almost all recover *something* or
        // fail cleanly.
        for _ in 0..200 {
            let mut raw = [0u8; 65];
            rand::fill(&mut raw[..]);
            raw[64] = 27 + (raw[64] & 1);
            let _ = recover_address(
                &[2; 32],
                &SignatureInput::Hex(format!("0x{}", hex::encode(raw))),
            );
        }
    }
}
