fn plain(#[arg(default)] limit: u32) -> u32 {
    limit
}

fn main() {
    let _ = plain(1);
}
