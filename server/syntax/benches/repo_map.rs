//! STUB: to be written.

fn main() {}
