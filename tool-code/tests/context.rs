//! The context measurement as a test: every program gives its task's answer, and code mode puts
//! at most 0.3x the bytes of direct calls into the model's context over the ten tasks
//! (`benches/context.rs` prints the table, with tokens).

mod measure;

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap()
}

#[test]
fn code_mode_puts_at_most_three_tenths_of_the_bytes_of_direct_calls_into_the_context() {
    let runtime = runtime();
    let (mut direct, mut code) = (0, 0);
    for task in measure::tasks() {
        let (d, _) = measure::run_direct(&task, &runtime);
        let (c, output) = measure::run_code(&task, &runtime);
        if std::env::var_os("CODE_MODE_SHOW").is_some() {
            eprintln!("== {}: direct {} B in {} calls, code {} B\n{output}", task.name, d.bytes(), d.calls, c.bytes());
        }
        direct += d.bytes();
        code += c.bytes();
    }
    let ratio = code as f64 / direct as f64;
    assert!(ratio <= 0.3, "code mode {code} B against direct {direct} B: {ratio:.3}x");
}

#[test]
fn every_program_gives_its_tasks_answer() {
    let runtime = runtime();
    let answers: Vec<String> = measure::tasks().iter().map(|task| measure::run_code(task, &runtime).1).collect();
    let expected = GOLDEN.split("\n=====\n").collect::<Vec<_>>();
    assert_eq!(answers, expected);
}

/// The answers of the ten programs on the fixture, in order, separated by `=====` lines (checked
/// by hand against the fixture when written).
const GOLDEN: &str = include_str!("measure/answers.txt");
