//! Percent-decoding for what arrives in URLs: query values, path segments, a connection URL's
//! parameters. Shared by the servers and the gateway's store, which cannot import each other.

/// Decodes `%XX` escapes; anything that is not one stays as written. `plus_is_space`: a query is
/// form-encoded (`+` is a space); a path segment or a URL parameter is not, and its `+` is a plus
/// (an id like `a+b` must reach the handler as written).
pub fn percent_decode(s: &str, plus_is_space: bool) -> String {
    let hex = |b: Option<&u8>| b.and_then(|b| (*b as char).to_digit(16)).map(|d| d as u8);
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match (bytes[i], hex(bytes.get(i + 1)), hex(bytes.get(i + 2))) {
            (b'%', Some(h), Some(l)) => {
                out.push(h * 16 + l);
                i += 3;
            }
            (b'+', _, _) if plus_is_space => {
                out.push(b' ');
                i += 1;
            }
            (b, _, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}
