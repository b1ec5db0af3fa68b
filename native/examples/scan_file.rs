//! Scan a pleach JSONL file block by block (16 MB) with the native scanner and print the time:
//! `cargo run --release --no-default-features --example scan_file -- FILE` (for profiling).
use std::time::Instant;

fn main() {
    let path = std::env::args().nth(1).expect("a JSONL file");
    let data = std::fs::read(&path).expect("readable file");
    let t = Instant::now();
    let (mut rows, mut refused) = (0usize, 0usize);
    let mut start = 0;
    while start < data.len() {
        let mut end = (start + (16 << 20)).min(data.len());
        while end < data.len() && data[end - 1] != b'\n' {
            end += 1;
        }
        match _core::pleach::scan_block(&data[start..end]) {
            Some(out) => rows += out.line.len(),
            None => refused += 1,
        }
        start = end;
    }
    println!(
        "{rows} rows, {refused} blocks refused, {:.3} s",
        t.elapsed().as_secs_f64()
    );
}
