//! argon2_rust times Argon2id in the RustCrypto argon2 crate (its AVX2 code
//! where the CPU has it), as one process would use it: hash_password_into
//! allocates, fills and frees its memory on every call. It prints, as JSON,
//! the milliseconds of every hash after one warm-up, and the process's peak
//! resident memory, as the lab's C peers do. Usage: argon2_rust M_KIB T P N
use argon2::{Algorithm, Argon2, Params, Version};
use std::time::Instant;

fn peak_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        })
        .unwrap_or(0)
}

fn main() {
    let args: Vec<u32> = std::env::args().skip(1).filter_map(|a| a.parse().ok()).collect();
    if args.len() != 4 {
        eprintln!("usage: argon2_rust M_KIB T P N");
        std::process::exit(2);
    }
    let params = match Params::new(args[0], args[1], args[2], Some(32)) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("argon2_rust: {e}");
            std::process::exit(2);
        }
    };
    let a = Argon2::new(Algorithm::Argon2id, Version::V0x13, params);
    let (pw, salt) = (b"correct horse battery staple", [7u8; 16]);
    let mut out = [0u8; 32];
    let mut ms = Vec::new();
    for i in 0..=args[3] {
        let s = Instant::now();
        if let Err(e) = a.hash_password_into(pw, &salt, &mut out) {
            eprintln!("argon2_rust: {e}");
            std::process::exit(1);
        }
        if i > 0 {
            ms.push(format!("{:.4}", s.elapsed().as_secs_f64() * 1e3));
        }
    }
    println!("{{\"ms\":[{}],\"peak_rss_kib\":{}}}", ms.join(","), peak_kib());
}
