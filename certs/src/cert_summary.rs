//! Just enough X.509 reading to say *which* certificate is being served.
//!
//! Logging the serial and expiry after a reload lets an operator match the log line
//! against `openssl x509 -noout -serial -enddate`. Pulling in a full X.509 parser for
//! two log fields is not worth it; the fields sit at fixed positions at the start of
//! the certificate, so walking a handful of DER headers is enough. Anything
//! unexpected yields `None` and the log line simply omits the fields.

const SEQUENCE: u8 = 0x30;
const INTEGER: u8 = 0x02;
const EXPLICIT_VERSION: u8 = 0xA0;
const UTC_TIME: u8 = 0x17;
const GENERALIZED_TIME: u8 = 0x18;

/// The identifying bits of a certificate, formatted for logs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CertSummary {
    /// Serial number in upper-case hex, the way `openssl x509 -serial` prints it.
    pub(crate) serial: String,
    /// End of validity as `YYYY-MM-DDTHH:MM:SSZ`.
    pub(crate) not_after: String,
}

/// Reads serial number and expiry from a DER certificate.
pub(crate) fn summarize(der: &[u8]) -> Option<CertSummary> {
    let (certificate, _) = expect_tag(der, SEQUENCE)?;
    let (tbs, _) = expect_tag(certificate, SEQUENCE)?;
    let mut rest = tbs;
    if rest.first() == Some(&EXPLICIT_VERSION) {
        (_, _, rest) = next_element(rest)?;
    }
    let (serial, rest) = expect_tag(rest, INTEGER)?;
    let (_signature_algorithm, rest) = expect_tag(rest, SEQUENCE)?;
    let (_issuer, rest) = expect_tag(rest, SEQUENCE)?;
    let (validity, _) = expect_tag(rest, SEQUENCE)?;
    let (_, _not_before, validity) = next_element(validity)?;
    let (time_tag, not_after, _) = next_element(validity)?;
    Some(CertSummary {
        serial: serial_hex(serial),
        not_after: format_time(time_tag, not_after)?,
    })
}

/// Splits off one DER element: `(tag, contents, rest)`.
fn next_element(input: &[u8]) -> Option<(u8, &[u8], &[u8])> {
    let (&tag, input) = input.split_first()?;
    let (&first, mut input) = input.split_first()?;
    let len = if first < 0x80 {
        usize::from(first)
    } else {
        // Long form. Zero length-bytes would be BER's indefinite length, not DER, and
        // more than four cannot describe a certificate anyone would serve.
        let count = usize::from(first & 0x7f);
        if count == 0 || count > 4 {
            return None;
        }
        let (bytes, rest) = input.split_at_checked(count)?;
        input = rest;
        bytes
            .iter()
            .fold(0usize, |len, &byte| (len << 8) | usize::from(byte))
    };
    let (contents, rest) = input.split_at_checked(len)?;
    Some((tag, contents, rest))
}

fn expect_tag(input: &[u8], tag: u8) -> Option<(&[u8], &[u8])> {
    let (found, contents, rest) = next_element(input)?;
    (found == tag).then_some((contents, rest))
}

fn serial_hex(serial: &[u8]) -> String {
    // DER adds a zero byte to keep a positive number's top bit clear; it is not part
    // of the serial as people know it.
    let serial = match serial {
        [0, rest @ ..] if !rest.is_empty() => rest,
        other => other,
    };
    serial.iter().map(|byte| format!("{byte:02X}")).collect()
}

impl CertSummary {
    /// The end of validity in seconds since the Unix epoch, for the expiry gauge.
    pub(crate) fn not_after_unix(&self) -> Option<i64> {
        let t = &self.not_after;
        let field = |range: std::ops::Range<usize>| t.get(range)?.parse::<i64>().ok();
        let (y, m, d) = (field(0..4)?, field(5..7)?, field(8..10)?);
        let (hh, mm, ss) = (field(11..13)?, field(14..16)?, field(17..19)?);
        // Days from the civil date (Howard Hinnant's algorithm), proleptic Gregorian.
        let y = if m <= 2 { y - 1 } else { y };
        let era = y.div_euclid(400);
        let yoe = y - era * 400;
        let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + d - 1;
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
        let days = era * 146_097 + doe - 719_468;
        Some(days * 86_400 + hh * 3600 + mm * 60 + ss)
    }
}

fn format_time(tag: u8, contents: &[u8]) -> Option<String> {
    let digits = std::str::from_utf8(contents).ok()?.strip_suffix('Z')?;
    if !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let full = match (tag, digits.len()) {
        // RFC 5280: two-digit years 50..99 are 19xx, 00..49 are 20xx.
        (UTC_TIME, 12) => {
            let century = if digits < "50" { "20" } else { "19" };
            format!("{century}{digits}")
        }
        (GENERALIZED_TIME, 14) => digits.to_owned(),
        _ => return None,
    };
    let part = |range: std::ops::Range<usize>| full.get(range);
    Some(format!(
        "{}-{}-{}T{}:{}:{}Z",
        part(0..4)?,
        part(4..6)?,
        part(6..8)?,
        part(8..10)?,
        part(10..12)?,
        part(12..14)?,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rcgen::{CertificateParams, KeyPair, SerialNumber, date_time_ymd};

    fn cert_with(serial: &[u8], not_after: (i32, u8, u8)) -> Vec<u8> {
        let mut params = CertificateParams::new(vec!["example.test".to_owned()]).expect("params");
        params.serial_number = Some(SerialNumber::from_slice(serial));
        params.not_after = date_time_ymd(not_after.0, not_after.1, not_after.2);
        let key = KeyPair::generate().expect("key");
        params.self_signed(&key).expect("self-signed").der().to_vec()
    }

    #[test]
    fn reads_serial_and_utc_time_expiry_before_2050() {
        let der = cert_with(&[0x0A, 0xBC, 0x01], (2031, 5, 17));
        let summary = summarize(&der).expect("summary");
        assert_eq!(summary.serial, "0ABC01");
        assert_eq!(summary.not_after, "2031-05-17T00:00:00Z");
    }

    #[test]
    fn reads_generalized_time_expiry_from_2050_on_and_drops_sign_padding() {
        let der = cert_with(&[0x80, 0x01], (2061, 12, 31));
        let summary = summarize(&der).expect("summary");
        assert_eq!(summary.serial, "8001");
        assert_eq!(summary.not_after, "2061-12-31T00:00:00Z");
    }

    #[test]
    fn the_expiry_converts_to_unix_seconds() {
        let at = |not_after: &str| {
            CertSummary {
                serial: String::new(),
                not_after: not_after.to_owned(),
            }
            .not_after_unix()
        };
        assert_eq!(at("1970-01-01T00:00:00Z"), Some(0));
        assert_eq!(at("2000-03-01T00:00:00Z"), Some(951_868_800));
        assert_eq!(at("2031-05-17T12:30:05Z"), Some(1_936_787_405));
        assert_eq!(at("garbage"), None);
    }

    #[test]
    fn truncated_or_garbage_input_yields_nothing_instead_of_panicking() {
        let der = cert_with(&[1], (2030, 1, 1));
        for len in 0..der.len() {
            let _ = summarize(&der[..len]);
        }
        assert_eq!(summarize(b"not a certificate"), None);
        assert_eq!(summarize(&[SEQUENCE, 0x80]), None);
    }
}
