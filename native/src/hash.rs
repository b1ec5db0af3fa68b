//! SHA-256 over many byte spans (the hash chain's rows), with the CPU's SHA extensions where
//! the `sha2` crate detects them at run time.

use sha2::{Digest, Sha256};

/// `f` of each span `data[offs[i]..offs[i+1]]`, `offs` holding n + 1 native-endian int64
/// offsets (as the bytes of an Arrow offsets buffer); a message when they are not ascending
/// within `data`.
pub fn map_spans<T>(
    offs: &[u8],
    data: &[u8],
    mut f: impl FnMut(&[u8]) -> T,
) -> Result<Vec<T>, String> {
    let at = |i: usize| -> i64 {
        let mut b = [0u8; 8];
        b.copy_from_slice(&offs[8 * i..8 * i + 8]);
        i64::from_ne_bytes(b)
    };
    let n = offs.len() / 8;
    let mut out = Vec::with_capacity(n.saturating_sub(1));
    if n == 0 {
        return Ok(out);
    }
    let mut lo = at(0);
    for i in 1..n {
        let hi = at(i);
        if lo < 0 || hi < lo || hi as usize > data.len() {
            return Err(format!(
                "offset {i} ({hi}) is out of order or beyond the data"
            ));
        }
        out.push(f(&data[lo as usize..hi as usize]));
        lo = hi;
    }
    Ok(out)
}

/// [`map_spans`] on replaykit's threads ([`crate::par::threads`]): the offsets are checked
/// first, then the spans are cut into ranges (several per thread) that the threads take in
/// turn (results in span order).
pub fn par_map_spans<T: Send>(
    offs: &[u8],
    data: &[u8],
    f: impl Fn(&[u8]) -> T + Sync,
) -> Result<Vec<T>, String> {
    let n = (offs.len() / 8).saturating_sub(1);
    let threads = crate::par::threads();
    if threads < 2 || n < 4096 {
        return map_spans(offs, data, f);
    }
    map_spans(offs, data, |_| ())?; // the offsets, checked once
    let ranges = crate::par::ranges(n, threads, 1024);
    let f = &f;
    let parts: Vec<Vec<T>> = crate::par::map_ranges(&ranges, threads, |lo, hi| {
        map_spans(&offs[8 * lo..8 * (hi + 1)], data, f).unwrap_or_default()
    });
    Ok(parts.into_iter().flatten().collect())
}

/// SHA-256 of each span (see [`map_spans`]): the 32-byte digests concatenated.
pub fn sha256_spans(offs: &[u8], data: &[u8]) -> Result<Vec<u8>, String> {
    let digests = par_map_spans(offs, data, |b| Sha256::digest(b))?;
    Ok(digests.iter().flat_map(|d| d.iter().copied()).collect())
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
        assert_eq!(
            hex,
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        let empty: String = d[32..].iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(
            empty,
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
    }

    #[test]
    fn parallel_spans_are_the_sequential_ones() {
        let data: Vec<u8> = (0..20_000u32).map(|i| (i % 251) as u8).collect();
        let o: Vec<i64> = (0..=10_000).map(|i| (i * 2) as i64).collect();
        let seq = map_spans(&offs(&o), &data, |b| Sha256::digest(b)).unwrap();
        let par = par_map_spans(&offs(&o), &data, |b| Sha256::digest(b)).unwrap();
        assert_eq!(seq, par);
        let mut bad = o.clone();
        bad[7000] = 1;
        assert!(par_map_spans(&offs(&bad), &data, |b| b.len()).is_err());
    }

    #[test]
    fn refuses_bad_offsets() {
        assert!(sha256_spans(&offs(&[0, 5]), b"abc").is_err());
        assert!(sha256_spans(&offs(&[2, 1]), b"abc").is_err());
    }
}

/// splitmix64's finaliser (`M` of replaykit's `state_hash`, `replaykit.fold.hashing.mix`).
#[inline]
pub fn mix(mut x: u64) -> u64 {
    x ^= x >> 30;
    x = x.wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x ^= x >> 27;
    x = x.wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^ (x >> 31)
}

const P: u64 = 0x0000_0100_0000_01B3;
const K: u64 = 0x9E37_79B9_7F4A_7C15;

/// `H(text)` of `replaykit.fold.hashing`: `M(sum_i (b_i + 1) * P**i + L * K)`, mod 2**64.
#[inline]
pub fn text_hash(b: &[u8]) -> u64 {
    let mut sum: u64 = 0;
    let mut pw: u64 = 1;
    for &c in b {
        sum = sum.wrapping_add((c as u64 + 1).wrapping_mul(pw));
        pw = pw.wrapping_mul(P);
    }
    mix(sum.wrapping_add((b.len() as u64).wrapping_mul(K)))
}

/// `H` of each span (see [`map_spans`]).
pub fn text_hashes(offs: &[u8], data: &[u8]) -> Result<Vec<u64>, String> {
    par_map_spans(offs, data, text_hash)
}

#[cfg(test)]
mod text_hash_tests {
    use super::*;

    #[test]
    fn empty_and_known_shape() {
        assert_eq!(text_hash(b""), mix(0));
        // (b'a' + 1) * P**0 + 1 * K
        assert_eq!(text_hash(b"a"), mix(98u64.wrapping_add(K)));
        let offs: Vec<u8> = [0i64, 1, 1, 3]
            .iter()
            .flat_map(|x| x.to_ne_bytes())
            .collect();
        let h = text_hashes(&offs, b"abc").unwrap();
        assert_eq!(h, vec![text_hash(b"a"), text_hash(b""), text_hash(b"bc")]);
    }
}
