//! SHA-256 over many byte spans (the hash chain's rows), with the CPU's SHA extensions where
//! the `sha2` crate detects them at run time.

use sha2::{Digest, Sha256};

/// SHA-256 of `data[offs[i]..offs[i+1]]` for each i; `offs` holds native-endian int64 values.
/// Returns the 32-byte digests concatenated, or a message when the offsets are not
/// ascending within `data`.
pub fn sha256_spans(offs: &[u8], data: &[u8]) -> Result<Vec<u8>, String> {
    let n = offs.len() / 8;
    if n == 0 {
        return Ok(Vec::new());
    }
    let at = |i: usize| -> i64 {
        let mut b = [0u8; 8];
        b.copy_from_slice(&offs[8 * i..8 * i + 8]);
        i64::from_ne_bytes(b)
    };
    let mut out = Vec::with_capacity((n - 1) * 32);
    let mut lo = at(0);
    for i in 1..n {
        let hi = at(i);
        if lo < 0 || hi < lo || hi as usize > data.len() {
            return Err(format!("offset {i} ({hi}) is out of order or beyond the data"));
        }
        out.extend_from_slice(&Sha256::digest(&data[lo as usize..hi as usize]));
        lo = hi;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn offs(v: &[i64]) -> Vec<u8> {
        v.iter().flat_map(|x| x.to_ne_bytes()).collect()
    }

    #[test]
    fn digests_known_values() {
        let d = sha256_spans(&offs(&[0, 3, 3]), b"abc").unwrap();
        assert_eq!(d.len(), 64);
        let hex: String = d[..32].iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
        let empty: String = d[32..].iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(empty, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    }

    #[test]
    fn refuses_bad_offsets() {
        assert!(sha256_spans(&offs(&[0, 5]), b"abc").is_err());
        assert!(sha256_spans(&offs(&[2, 1]), b"abc").is_err());
    }
}
