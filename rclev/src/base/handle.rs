//! [`EntityHandle`]: the shared handle type of the entities whose drop cancels work.

use std::sync::{Arc, Weak};

/// A shared handle to an entity whose drop cancels its work (a timer stops, a publisher or
/// subscription unregisters, a service or action server is withdrawn…). Clone it to share; the
/// entity lives while any clone does. (Not to be confused with Tokio's runtime `Handle`, which
/// [`RuntimeChoice::Adopt`](crate::RuntimeChoice::Adopt) takes.)
///
/// It is `#[must_use]`, unlike a bare `Arc`: `node.create_timer_repeating(..)?;` would drop the
/// timer at once, so it never fires, and the compiler says so. Its hint, `let _ = …`, is the
/// same mistake without the warning: `_` binds nothing, so the handle is dropped at once too.
/// Keep it in a named binding (`let _timer = …` lives to the end of its scope). Derefs to the
/// entity's state type, whose methods it offers.
///
/// ```compile_fail
/// #![deny(unused_must_use)]
/// fn arm(node: &rclev::Node) -> rclev::Result<()> {
///     node.create_timer_repeating(std::time::Duration::from_secs(1), || {})?;
///     Ok(())
/// }
/// ```
///
/// ```
/// #![deny(unused_must_use)]
/// fn arm(node: &rclev::Node) -> rclev::Result<rclev::Timer> {
///     let timer = node.create_timer_repeating(std::time::Duration::from_secs(1), || {})?;
///     Ok(timer)
/// }
/// ```
#[must_use = "dropping this handle cancels the entity at once (a timer stops, a publisher or subscription unregisters…), and `let _ = …` drops it too: keep it in a named binding (`let _timer = …`)"]
pub struct EntityHandle<T: ?Sized>(Arc<T>);

impl<T> EntityHandle<T> {
    pub(crate) fn new(value: T) -> Self {
        Self(Arc::new(value))
    }
}

impl<T: ?Sized> EntityHandle<T> {
    pub(crate) fn from_arc(arc: Arc<T>) -> Self {
        Self(arc)
    }
}

impl<T: ?Sized> EntityHandle<T> {
    /// A weak reference, which does not keep the entity alive.
    pub fn downgrade(this: &Self) -> WeakEntityHandle<T> {
        WeakEntityHandle(Arc::downgrade(&this.0))
    }
}

impl<T: ?Sized> Clone for EntityHandle<T> {
    fn clone(&self) -> Self {
        Self(self.0.clone())
    }
}

impl<T: ?Sized> std::ops::Deref for EntityHandle<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.0
    }
}

impl<T: ?Sized + std::fmt::Debug> std::fmt::Debug for EntityHandle<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

/// A weak [`EntityHandle`]: [`upgrade`](Self::upgrade) gives the handle back while the entity lives.
pub struct WeakEntityHandle<T: ?Sized>(Weak<T>);

impl<T: ?Sized> WeakEntityHandle<T> {
    /// The handle, if the entity still lives.
    pub fn upgrade(&self) -> Option<EntityHandle<T>> {
        self.0.upgrade().map(EntityHandle)
    }
}

impl<T: ?Sized> Clone for WeakEntityHandle<T> {
    fn clone(&self) -> Self {
        Self(self.0.clone())
    }
}

impl<T: ?Sized> std::fmt::Debug for WeakEntityHandle<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("WeakEntityHandle")
    }
}
