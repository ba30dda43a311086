//! `TOOL_MAX_LINES`, `TOOL_MAX_BYTES` and `TOOL_MAX_TURN_BYTES`, read in a child process (the test
//! binary run again with the variables set) so that no test changes its own environment.

use std::process::Command;

use tool_runtime::output::{OutputLayer, OutputLimits, output_limits_from_env};

fn run_child(test: &str, vars: &[(&str, &str)]) -> std::process::Output {
    let mut command = Command::new(std::env::current_exe().unwrap());
    command.args(["--exact", test, "--nocapture"]).env("OUTPUT_ENV_CHILD", "1");
    command.env_remove("TOOL_MAX_LINES").env_remove("TOOL_MAX_BYTES").env_remove("TOOL_MAX_TURN_BYTES");
    command.env_remove("TOOL_OUTPUT_TTL_SECS").env_remove("TOOL_OUTPUT_MAX_BYTES");
    for (k, v) in vars {
        command.env(k, v);
    }
    command.output().unwrap()
}

#[test]
fn child_prints_the_layer_from_env() {
    if std::env::var_os("OUTPUT_ENV_CHILD").is_none() {
        return;
    }
    match OutputLayer::from_env() {
        Ok(layer) => {
            let OutputLimits { max_lines, max_bytes } = layer.output_limits();
            println!("LAYER lines={max_lines} bytes={max_bytes} turn={}", layer.turn_budget());
        }
        Err(e) => println!("LAYER error={e}"),
    }
}

fn child_line(vars: &[(&str, &str)]) -> String {
    let output = run_child("child_prints_the_layer_from_env", vars);
    let stdout = String::from_utf8(output.stdout).unwrap();
    stdout.lines().find(|l| l.starts_with("LAYER ")).unwrap_or_default().to_owned()
}

#[test]
fn without_variables_the_defaults_apply() {
    assert_eq!(child_line(&[]), "LAYER lines=2000 bytes=51200 turn=65536");
}

#[test]
fn the_variables_override_the_defaults() {
    let vars = [("TOOL_MAX_LINES", "10"), ("TOOL_MAX_BYTES", "4096"), ("TOOL_MAX_TURN_BYTES", " 8192 ")];

    assert_eq!(child_line(&vars), "LAYER lines=10 bytes=4096 turn=8192");
}

#[test]
fn a_variable_that_is_not_a_positive_integer_is_an_error_naming_it() {
    assert_eq!(
        child_line(&[("TOOL_MAX_BYTES", "0")]),
        "LAYER error=TOOL_MAX_BYTES must be a positive integer (bytes), got `0`"
    );
    assert_eq!(
        child_line(&[("TOOL_MAX_TURN_BYTES", "64k")]),
        "LAYER error=TOOL_MAX_TURN_BYTES must be a positive integer (bytes), got `64k`"
    );
}

#[test]
fn child_prints_the_store_limits_from_env() {
    if std::env::var_os("OUTPUT_ENV_CHILD").is_none() {
        return;
    }
    match output_limits_from_env() {
        Ok(limits) => println!("LIMITS ttl={} bytes={}", limits.ttl.as_secs(), limits.max_bytes),
        Err(e) => println!("LIMITS error={e}"),
    }
}

fn limits_line(vars: &[(&str, &str)]) -> String {
    let output = run_child("child_prints_the_store_limits_from_env", vars);
    let stdout = String::from_utf8(output.stdout).unwrap();
    stdout.lines().find(|l| l.starts_with("LIMITS ")).unwrap_or_default().to_owned()
}

#[test]
fn the_output_store_limits_default_to_24_hours_and_256_mib() {
    assert_eq!(limits_line(&[]), "LIMITS ttl=86400 bytes=268435456");
}

#[test]
fn the_output_store_limits_are_read_from_their_variables() {
    assert_eq!(
        limits_line(&[("TOOL_OUTPUT_TTL_SECS", "90"), ("TOOL_OUTPUT_MAX_BYTES", "4096")]),
        "LIMITS ttl=90 bytes=4096"
    );
}

#[test]
fn an_output_store_limit_of_zero_is_refused_with_its_variable_named() {
    assert_eq!(
        limits_line(&[("TOOL_OUTPUT_MAX_BYTES", "0")]),
        "LIMITS error=TOOL_OUTPUT_MAX_BYTES=\"0\" is not a positive integer; set it to a whole number above 0 or unset it"
    );
}
