//! The committed include/rtick.h is what cbindgen generates from the source
//! now. After changing the API: RTICK_BLESS=1 cargo test -p rtick-ffi --test header

use std::path::Path;

#[test]
fn committed_header_is_current() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let config = cbindgen::Config::from_file(dir.join("cbindgen.toml")).expect("cbindgen.toml");
    let mut fresh = Vec::new();
    cbindgen::Builder::new()
        .with_crate(dir)
        .with_config(config)
        .generate()
        .expect("cbindgen generates the header")
        .write(&mut fresh);
    let path = dir.join("include/rtick.h");
    if std::env::var_os("RTICK_BLESS").is_some() {
        std::fs::write(&path, &fresh).unwrap();
    }
    let committed = std::fs::read(&path).unwrap_or_default();
    assert!(
        committed == fresh,
        "include/rtick.h differs from a fresh cbindgen run: RTICK_BLESS=1 cargo test -p rtick-ffi --test header"
    );
}
