//! What enters the model's context, by direct tool calls against code mode, over the ten tasks of
//! `tests/measure/mod.rs`: bytes, and tokens by OpenAI's `o200k_base` tokenizer (tiktoken-rs,
//! which ships the vocabulary). Run: `cargo bench -p tool-code --bench context --features measure`.

#[path = "../tests/measure/mod.rs"]
mod context;

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let bpe = tiktoken_rs::o200k_base().unwrap();
    let tokens = |c: &context::Context| c.texts.iter().map(|t| bpe.encode_ordinary(t).len()).sum::<usize>();
    println!(
        "| task | direct calls | direct bytes | code bytes | bytes ratio | direct tokens | code tokens | tokens ratio |"
    );
    println!("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |");
    let (mut db, mut cb, mut dt, mut ct) = (0, 0, 0, 0);
    for task in context::tasks() {
        let (d, _) = context::run_direct(&task, &runtime);
        let (c, _) = context::run_code(&task, &runtime);
        let (dtok, ctok) = (tokens(&d), tokens(&c));
        println!(
            "| {} | {} | {} | {} | {:.2}x | {} | {} | {:.2}x |",
            task.name,
            d.calls,
            d.bytes(),
            c.bytes(),
            c.bytes() as f64 / d.bytes() as f64,
            dtok,
            ctok,
            ctok as f64 / dtok as f64
        );
        db += d.bytes();
        cb += c.bytes();
        dt += dtok;
        ct += ctok;
    }
    println!(
        "| **total** | | {db} | {cb} | **{:.2}x** | {dt} | {ct} | **{:.2}x** |",
        cb as f64 / db as f64,
        ct as f64 / dt as f64
    );
}
