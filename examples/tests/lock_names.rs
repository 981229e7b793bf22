//! The examples print Redisson's key names; they must stay Redisson's.

use lock_core::KeyLayout;

#[test]
fn examples_use_redisson_compatible_names() {
    let keys = KeyLayout::default().lock("orders");
    assert_eq!(&keys.channel[..], b"redisson_lock__channel:{orders}");
}
