// LoopWaker and WakeHandle: the one thread-safe entry into the loop. A uv_async handle owned by a loop-owned
// LoopWaker; any thread may call WakeHandle.wake(), and the callback then runs on the loop. Passing data across is
// the caller's business (a Mutex-guarded inbox, say); this file only wakes.

internal import CLibUV

/// Loop-owned. Wakes the loop from another thread (`uv_async`): a Sendable `handle` any thread may call, plus a
/// callback that runs on the loop. An open waker keeps the loop alive.
///
/// Wakes coalesce: several `wake()` calls before the loop gets to them run the callback once.
@MainActor
public final class LoopWaker: LoopHandleOwner {
    /// The Sendable handle to give to other threads. After `close()` its `wake()` does nothing.
    public nonisolated let handle: WakeHandle

    let loop: EventLoop
    /// The async handle; nonisolated(unsafe) only so deinit can free it, every other use is on the main actor
    /// (`WakeTarget` reaches it from other threads under its mutex, and only until `close()`).
    nonisolated(unsafe) let asyncHandle: UnsafeMutablePointer<uv_async_t>
    private var callback: (@MainActor () -> Void)?
    private var isClosing = false

    /// Creates the waker; `callback` runs on the loop after one or more `handle.wake()` calls.
    public init(loop: EventLoop, _ callback: @escaping @MainActor () -> Void) throws(UVError) {
        let target = try WakeTarget()
        let asyncHandle = try openHandle(uv_async_t(), on: loop, "uv_async_init") { uv_async_init($0, $1, onWake) }
        target.attach(asyncHandle)
        self.handle = WakeHandle(target: target)
        self.loop = loop
        self.asyncHandle = asyncHandle
        self.callback = callback
        retainThroughData(asyncHandle, owner: self)
    }

    deinit {
        // Runs only after the close callback dropped the retain taken in init.
        self.asyncHandle.deallocate()
    }

    /// Starts closing; idempotent. From here on `handle.wake()` does nothing and the callback is not called again.
    public func close() {
        guard !self.isClosing else { return }
        self.isClosing = true
        // Detach first: once uv_close runs no other thread may be inside uv_async_send on this handle.
        self.handle.target.detach()
        uv_close(asHandle(self.asyncHandle), onHandleClosed)
    }

    func didClose() {
        self.callback = nil
    }

    fileprivate func fire() {
        guard !self.isClosing else { return }
        self.callback?()
    }
}

/// A thread-safe token that wakes its `LoopWaker`'s loop. Copy it freely, to any thread.
public struct WakeHandle: @unchecked Sendable {
    // @unchecked: the only state is `target`, whose pointer is read and written under its mutex.
    let target: WakeTarget

    /// Asks the loop to run the waker's callback soon (`uv_async_send`); does nothing once the waker is closing.
    public func wake() {
        self.target.send()
    }
}

/// The async handle's address as other threads see it, guarded by a libuv mutex; nil before attach and after detach.
/// The audited escape hatch behind `WakeHandle`'s `@unchecked Sendable`.
final class WakeTarget {
    private let mutex: UnsafeMutablePointer<uv_mutex_t>
    /// Guarded by `mutex`.
    private var asyncHandle: UnsafeMutablePointer<uv_async_t>?

    init() throws(UVError) {
        self.mutex = try allocateInitialized(uv_mutex_t(), "uv_mutex_init") { uv_mutex_init($0) }
    }

    deinit {
        uv_mutex_destroy(self.mutex)
        self.mutex.deallocate()
    }

    func attach(_ asyncHandle: UnsafeMutablePointer<uv_async_t>) {
        uv_mutex_lock(self.mutex)
        self.asyncHandle = asyncHandle
        uv_mutex_unlock(self.mutex)
    }

    func detach() {
        uv_mutex_lock(self.mutex)
        self.asyncHandle = nil
        uv_mutex_unlock(self.mutex)
    }

    func send() {
        uv_mutex_lock(self.mutex)
        defer { uv_mutex_unlock(self.mutex) }
        guard let asyncHandle = self.asyncHandle else { return }
        // Fails only for a handle that is not an initialised, open async handle, which detach() rules out.
        uvAssert(uv_async_send(asyncHandle), "uv_async_send")
    }
}

private let onWake: uv_async_cb = { handle in
    guard let waker = owner(of: handle.map(asHandle), as: LoopWaker.self) else { return }
    MainActor.assumeIsolated { waker.fire() }
}
