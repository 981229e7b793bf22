//! A lease expires exactly when Redis's rule says, on a clock only the test moves.

use lock_core::script::acquire::{self, AcquireReply, HolderTtl};
use lock_core::script::reference::ReferenceStore;
use lock_core::{KeyLayout, Lease, Millis, Owner, RequestId};

#[test]
fn a_30s_lease_outlives_its_deadline_millisecond_and_no_more() {
    let mut store = ReferenceStore::new(0);
    let keys = KeyLayout::default().lock("sim");
    let lease = Lease::from_millis(30_000).unwrap();
    let (a, b) = (Owner::new("a", 1), Owner::new("b", 1));
    let take = |store: &mut ReferenceStore, owner: &Owner, req| {
        let call = acquire::call(&keys, &RequestId(req), lease, owner, Millis(5_000));
        acquire::decode(&call.run_native(store)).unwrap()
    };
    assert_eq!(take(&mut store, &a, 1), AcquireReply::Acquired);
    store.set_now(30_000);
    assert_eq!(
        take(&mut store, &b, 2),
        AcquireReply::Held(HolderTtl::Remaining(Millis(0)))
    );
    store.set_now(30_001);
    assert_eq!(take(&mut store, &b, 2), AcquireReply::Acquired);
}
