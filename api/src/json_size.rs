//! What decoding a JSON text may cost, known before it is decoded: both the webhook (for the
//! reviews anything in the cluster may send it) and the Flink REST client (for the answers
//! of JobManagers a tenant controls) refuse texts that would decode into too many values.

/// The objects, arrays and separators of `text` outside strings: an upper bound of the
/// values it decodes into, whatever its shape (counted on bytes, so text that is not JSON
/// counts too). A text of `[{},{},...]` decodes into far more memory than its length, which
/// a size limit alone does not catch.
pub fn json_values(text: &[u8]) -> usize {
    let (mut count, mut in_string, mut escaped) = (0, false, false);
    for &byte in text {
        if in_string {
            match byte {
                _ if escaped => escaped = false,
                b'\\' => escaped = true,
                b'"' => in_string = false,
                _ => {}
            }
        } else {
            match byte {
                b'"' => in_string = true,
                b'{' | b'[' | b',' => count += 1,
                _ => {}
            }
        }
    }
    count
}

#[cfg(test)]
mod tests {
    use super::json_values;

    #[test]
    fn values_outside_strings_are_counted() {
        assert_eq!(json_values(br#"{"a":[1,2],"b":"x,[{"}"#), 4);
        assert_eq!(json_values(br#"["\\",",",{}]"#), 4);
        assert_eq!(json_values(br#"["\",[{",1]"#), 2);
        assert_eq!(json_values(b""), 0);
    }
}
