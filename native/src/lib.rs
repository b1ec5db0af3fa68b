//! replaykit's native core, exposed to Python as the private module `replaykit._core`.
//!
//! The Python side (`replaykit/_base/native.py`) decides when to call it (`REPLAYKIT_NATIVE=0`
//! turns it off) and turns its buffers into Arrow arrays without copying them
//! (`pa.py_buffer` over [`NativeBuf`], which implements the buffer protocol).
//!
//! Every entry point releases the GIL while it works and catches panics: a panic (a bug,
//! never expected) is reported as `None` / a Python `RuntimeError` by the wrapper, so the
//! caller falls back to the reference path instead of the process dying.

pub mod canon;
pub mod chain;
pub mod codex;
pub mod cols;
pub mod gather;
pub mod hash;
pub mod json;
pub mod lines;
pub mod otlp;
pub mod par;
pub mod platform;
pub mod pleach;
pub mod toh;
pub mod transcripts;

// The Python binding (feature "python", on by default; the fuzz targets build without it).
#[cfg(feature = "python")]
mod py;

/// Test helper: `(offsets, data)` of strings as the span kernels take them (n + 1 int64
/// offsets as native-endian bytes).
#[cfg(test)]
pub(crate) fn spans_of(items: &[&str]) -> (Vec<u8>, Vec<u8>) {
    let mut offs: Vec<u8> = 0i64.to_ne_bytes().to_vec();
    let mut data = Vec::new();
    for it in items {
        data.extend_from_slice(it.as_bytes());
        offs.extend_from_slice(&(data.len() as i64).to_ne_bytes());
    }
    (offs, data)
}
