//! [`Handle`]: the shared handle type of the entities whose drop cancels work.

use std::sync::{Arc, Weak};

/// A shared handle to an entity whose drop cancels its work (a timer stops, a publisher or
/// subscription unregisters, a service or action server is withdrawn…). Clone it to share; the entity lives
/// while any clone does.
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
pub struct Handle<T: ?Sized>(Arc<T>);

impl<T> Handle<T> {
    pub(crate) fn new(value: T) -> Self {
        Self(Arc::new(value))
    }
}

impl<T: ?Sized> Handle<T> {
    pub(crate) fn from_arc(arc: Arc<T>) -> Self {
        Self(arc)
    }
}

impl<T: ?Sized> Handle<T> {
    /// A weak reference, which does not keep the entity alive.
    pub fn downgrade(this: &Self) -> WeakHandle<T> {
        WeakHandle(Arc::downgrade(&this.0))
    }
}

impl<T: ?Sized> Clone for Handle<T> {
    fn clone(&self) -> Self {
        Self(self.0.clone())
    }
}

impl<T: ?Sized> std::ops::Deref for Handle<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.0
    }
}

impl<T: ?Sized + std::fmt::Debug> std::fmt::Debug for Handle<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

/// A weak [`Handle`]: [`upgrade`](Self::upgrade) gives the handle back while the entity lives.
pub struct WeakHandle<T: ?Sized>(Weak<T>);

impl<T: ?Sized> WeakHandle<T> {
    /// The handle, if the entity still lives.
    pub fn upgrade(&self) -> Option<Handle<T>> {
        self.0.upgrade().map(Handle)
    }
}

impl<T: ?Sized> Clone for WeakHandle<T> {
    fn clone(&self) -> Self {
        Self(self.0.clone())
    }
}

impl<T: ?Sized> std::fmt::Debug for WeakHandle<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("WeakHandle")
    }
}
