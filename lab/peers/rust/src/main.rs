//! argon2_rust times Argon2id in the RustCrypto argon2 crate (its AVX2 code
//! where the CPU has it), as one process would use it: hash_password_into
//! allocates, fills and frees its memory on every call. It prints, as JSON,
//! the elapsed and CPU milliseconds of every hash after one warm-up, and the
//! process's peak resident memory, as the lab's C peers do. Usage: argon2_rust M_KIB T P N
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

/// cpu_ms is the CPU time of the whole process, every thread, in
/// milliseconds.
fn cpu_ms() -> f64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: ts is a valid timespec the call writes into.
    unsafe { libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &mut ts) };
    ts.tv_sec as f64 * 1e3 + ts.tv_nsec as f64 / 1e6
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
    let (mut ms, mut cpu) = (Vec::new(), Vec::new());
    for i in 0..=args[3] {
        let (s, c) = (Instant::now(), cpu_ms());
        if let Err(e) = a.hash_password_into(pw, &salt, &mut out) {
            eprintln!("argon2_rust: {e}");
            std::process::exit(1);
        }
        if i > 0 {
            ms.push(format!("{:.4}", s.elapsed().as_secs_f64() * 1e3));
            cpu.push(format!("{:.4}", cpu_ms() - c));
        }
    }
    println!(
        "{{\"ms\":[{}],\"cpu_ms\":[{}],\"peak_rss_kib\":{}}}",
        ms.join(","),
        cpu.join(","),
        peak_kib()
    );
}
