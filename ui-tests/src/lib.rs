//! Compile tests of `#[tool]` live in `tests/`.
