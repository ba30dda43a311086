//! Runs the same small programs in pydantic's Monty (Python) and in QuickJS (JavaScript, through
//! rquickjs, as tool-code does), a fresh interpreter per run, and prints the median time per run
//! of each engine and their ratio. Then it trips each limit the two engines offer and prints what
//! the host sees.
//!
//! `cargo run --release --manifest-path tool-code/compare-monty/Cargo.toml
//!  --target-dir target/compare-monty -- [runs]` (runs defaults to 21, at most 201).
//!
//! This is a measurement, not a test: nothing here asserts a time.

use std::time::{Duration, Instant};

use monty::{MontyRun, RunProgress};
use monty_types::{
    CompileOptions, MontyException, MontyObject, NameLookupResult, PrintWriter, ResourceLimits, ResourceTracker,
};
use rquickjs::{Context, Ctx, Function, Runtime};

/// The limits every measured run gets, close to tool-code's defaults: generous enough that no
/// workload reaches them, present so that both engines pay for checking them.
const WALL_TIME: Duration = Duration::from_secs(10);
const JS_MEMORY_BYTES: usize = 64 << 20;
const JS_STACK_BYTES: usize = 1 << 20;

/// One workload in both languages, with the value both must return.
struct Program {
    name: &'static str,
    python: &'static str,
    javascript: &'static str,
    expected: i64,
}

const PROGRAMS: &[Program] = &[
    Program { name: "empty (start-up)", python: "1", javascript: "1", expected: 1 },
    Program {
        name: "loop: sum 1..=1_000_000",
        python: "total = 0\nfor i in range(1, 1000001):\n    total += i\ntotal\n",
        javascript: "let total = 0;\nfor (let i = 1; i <= 1000000; i++) {\n  total += i;\n}\ntotal\n",
        expected: 500_000_500_000,
    },
    Program {
        name: "strings: build, join 10,000",
        python: "parts = []\nfor i in range(10000):\n    parts.append('item' + str(i))\n\
                 joined = ','.join(parts)\nlen(joined)\n",
        javascript: "const parts = [];\nfor (let i = 0; i < 10000; i++) {\n  parts.push('item' + String(i));\n}\n\
                     const joined = parts.join(',');\njoined.length\n",
        expected: 88_889,
    },
    Program {
        name: "dict: count words of 50,000",
        python: "vocab = ['alpha', 'beta', 'gamma', 'delta', 'epsilon', 'zeta', 'eta', 'theta', 'iota', 'kappa', 'lambda', 'mu', 'nu']\n\
                 words = []\nfor i in range(50000):\n    words.append(vocab[(i * 7 + i // 13) % 13])\n\
                 text = ' '.join(words)\ncounts = {}\nfor w in text.split(' '):\n    counts[w] = counts.get(w, 0) + 1\n\
                 len(counts) * 1000000 + counts['alpha']\n",
        javascript: "const vocab = ['alpha', 'beta', 'gamma', 'delta', 'epsilon', 'zeta', 'eta', 'theta', 'iota', 'kappa', 'lambda', 'mu', 'nu'];\n\
                     const words = [];\nfor (let i = 0; i < 50000; i++) {\n  words.push(vocab[(i * 7 + Math.floor(i / 13)) % 13]);\n}\n\
                     const text = words.join(' ');\nconst counts = {};\nfor (const w of text.split(' ')) {\n  counts[w] = (counts[w] || 0) + 1;\n}\n\
                     Object.keys(counts).length * 1000000 + counts['alpha']\n",
        expected: 0, // filled in from the Python run; both must agree
    },
    Program {
        name: "host: 100 calls",
        python: "total = 0\nfor i in range(100):\n    total += host(i)\ntotal\n",
        javascript: "let total = 0;\nfor (let i = 0; i < 100; i++) {\n  total += host(i);\n}\ntotal\n",
        expected: 9_900,
    },
];

/// Runs a Python program on a fresh Monty run (parse, compile, heap), answering `host(x)` with
/// `2 * x` through Monty's suspension: the run stops at each call and the host resumes it.
fn run_monty(source: &str, limits: ResourceLimits) -> Result<i64, MontyException> {
    let runner = MontyRun::new(source.to_owned(), "program.py", vec!["host".to_owned()], CompileOptions::default())?;
    let host = MontyObject::Function { name: "host".to_owned(), docstring: None };
    let mut progress = runner.start(vec![host], ResourceTracker::new(limits), PrintWriter::Disabled)?;
    loop {
        match progress {
            RunProgress::Complete(MontyObject::Int(n)) => return Ok(n),
            RunProgress::Complete(other) => {
                return Err(MontyException::runtime_error(format!("unexpected result {other:?}")));
            }
            RunProgress::FunctionCall(call) => {
                let answer = match call.args.as_slice() {
                    [MontyObject::Int(x)] => MontyObject::Int(x * 2),
                    _ => MontyObject::None,
                };
                progress = call.resume(answer, PrintWriter::Disabled)?;
            }
            // A name the program did not define: Monty asks the host before raising NameError.
            RunProgress::NameLookup(lookup) => {
                progress = lookup.resume(NameLookupResult::Undefined, PrintWriter::Disabled)?;
            }
            _ => return Err(MontyException::runtime_error("unexpected suspension")),
        }
    }
}

fn monty_limits() -> ResourceLimits {
    ResourceLimits::default().max_duration(WALL_TIME)
}

/// What a QuickJS run ended with: the value, or the thrown text with its stack (file:line).
fn run_quickjs(source: &str, memory: usize, stack: usize, wall: Duration) -> Result<i64, String> {
    let runtime = Runtime::new().map_err(|e| e.to_string())?;
    runtime.set_memory_limit(memory);
    runtime.set_max_stack_size(stack);
    let deadline = Instant::now() + wall;
    runtime.set_interrupt_handler(Some(Box::new(move || Instant::now() >= deadline)));
    let context = Context::full(&runtime).map_err(|e| e.to_string())?;
    context.with(|ctx| {
        let host = Function::new(ctx.clone(), |x: i32| x * 2).map_err(|e| e.to_string())?;
        ctx.globals().set("host", host).map_err(|e| e.to_string())?;
        let mut options = rquickjs::context::EvalOptions::default();
        options.filename = Some("program.js".to_owned());
        match ctx.eval_with_options::<f64, _>(source, options) {
            Ok(n) => Ok(n as i64),
            Err(_) => Err(thrown(&ctx)),
        }
    })
}

/// The pending exception as "message | stack".
fn thrown(ctx: &Ctx<'_>) -> String {
    let value = ctx.catch();
    match value.as_exception() {
        Some(e) => format!(
            "{}: {} | stack: {}",
            e.as_object().get::<_, String>("name").unwrap_or_default(),
            e.message().unwrap_or_default(),
            e.stack().unwrap_or_default().trim()
        ),
        None => format!("non-error thrown: {value:?}"),
    }
}

fn quickjs_default(source: &str) -> Result<i64, String> {
    run_quickjs(source, JS_MEMORY_BYTES, JS_STACK_BYTES, WALL_TIME)
}

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

fn time_runs<E: std::fmt::Display>(
    runs: usize,
    mut f: impl FnMut() -> Result<i64, E>,
) -> Result<(Duration, i64), String> {
    let mut samples = Vec::with_capacity(runs);
    let mut value = 0;
    for _ in 0..runs {
        let start = Instant::now();
        value = f().map_err(|e| e.to_string())?;
        samples.push(start.elapsed());
    }
    Ok((median(samples), value))
}

fn show(d: Duration) -> String {
    let us = d.as_secs_f64() * 1e6;
    if us >= 10_000.0 { format!("{:.1} ms", us / 1000.0) } else { format!("{us:.0} µs") }
}

fn main() {
    let runs: usize = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(21).clamp(1, 201);
    println!("median of {runs} runs, a fresh interpreter per run (parse + compile + run)\n");
    println!("| program | Monty 0.0.23 (Python) | QuickJS, rquickjs 0.14 (JS) | Monty / QuickJS |");
    println!("|---|---:|---:|---:|");
    for program in PROGRAMS {
        // One warm-up run of each, outside the timing.
        let _ = run_monty(program.python, monty_limits());
        let _ = quickjs_default(program.javascript);
        let monty = time_runs(runs, || run_monty(program.python, monty_limits()));
        let quickjs = time_runs(runs, || quickjs_default(program.javascript));
        match (monty, quickjs) {
            (Ok((m, mv)), Ok((q, qv))) => {
                let agree = mv == qv && (program.expected == 0 || mv == program.expected);
                let note = if agree { String::new() } else { format!(" (results differ: {mv} vs {qv})") };
                let ratio = m.as_secs_f64() / q.as_secs_f64();
                println!("| {} | {} | {} | {ratio:.2}×{note} |", program.name, show(m), show(q));
            }
            (m, q) => {
                let cell = |r: &Result<(Duration, i64), String>| match r {
                    Ok((d, _)) => show(*d),
                    Err(e) => format!("failed: {}", e.replace('\n', " / ")),
                };
                println!("| {} | {} | {} | — |", program.name, cell(&m), cell(&q));
            }
        }
    }

    println!("\nlimits: what the host sees when a program reaches each one\n");
    let one_line = |s: String| s.trim().replace('\n', " / ");

    // Time.
    let spin_py = "x = 1\ntry:\n    while True:\n        x += 1\nexcept Exception:\n    pass\nx\n";
    let limits = ResourceLimits::default().max_duration(Duration::from_millis(50));
    let start = Instant::now();
    let r = run_monty(spin_py, limits);
    println!(
        "- Monty time (50 ms, loop inside try/except Exception), after {}: {}",
        show(start.elapsed()),
        one_line(describe(r))
    );
    let spin_js = "let x = 1;\ntry {\n  while (true) { x++; }\n} catch (e) {}\nx\n";
    let start = Instant::now();
    let r = run_quickjs(spin_js, JS_MEMORY_BYTES, JS_STACK_BYTES, Duration::from_millis(50));
    println!(
        "- QuickJS interrupt (50 ms deadline, loop inside try/catch), after {}: {}",
        show(start.elapsed()),
        one_line(describe(r))
    );

    // Recursion / stack.
    let deep_py = "def f(n):\n    return f(n + 1)\n\nf(0)\n";
    let r = run_monty(deep_py, ResourceLimits::default().max_duration(WALL_TIME).max_recursion_depth(200));
    println!("- Monty recursion (depth 200): {}", one_line(describe(r)));
    let deep_js = "function f(n) {\n  return f(n + 1);\n}\nf(0)\n";
    let r = run_quickjs(deep_js, JS_MEMORY_BYTES, 256 << 10, WALL_TIME);
    println!("- QuickJS stack (256 KiB): {}", one_line(describe(r)));

    // Memory. Monty's `max_memory` counts the process's bytes through its own global allocator
    // (monty-alloc); the `monty-memory` binary installs it, so that this one times both engines on
    // the system allocator.
    println!("- Monty memory: see the monty-memory binary (it needs monty-alloc as the global allocator)");
    let grow_js = "const a = [];\nwhile (true) {\n  a.push('x'.repeat(1000) + a.length);\n}\n";
    let r = run_quickjs(grow_js, 8 << 20, JS_STACK_BYTES, WALL_TIME);
    println!("- QuickJS memory (8 MiB): {}", one_line(describe(r)));

    // An uncaught error, for the line number each engine reports.
    let bad_py = "x = 1\ny = 2\nz = x + undefined_name\nz\n";
    println!("- Monty error on line 3: {}", one_line(describe(run_monty(bad_py, monty_limits()))));
    let bad_js = "const x = 1;\nconst y = 2;\nconst z = x + undefinedName;\nz\n";
    println!("- QuickJS error on line 3: {}", one_line(describe(quickjs_default(bad_js))));
}

fn describe<E: std::fmt::Display>(r: Result<i64, E>) -> String {
    match r {
        Ok(v) => format!("no error, returned {v}"),
        Err(e) => e.to_string(),
    }
}
