// The ownership idiom every handle class shares: one Swift object owns one heap-allocated libuv handle, is retained
// through `handle.data` from a successful init until the close callback, and frees the memory in its deinit. Also the
// pointer casts between handle types. No public API lives here.

internal import CLibUV

/// A loop-owned object that owns exactly one libuv handle.
@MainActor
protocol LoopHandleOwner: AnyObject, Sendable {
    /// The handle, as the `uv_handle_t` it starts with.
    var uvHandle: UnsafeMutablePointer<uv_handle_t> { get }
    /// Set once closing started (`closeHandle`): no callback runs after it.
    var isClosing: Bool { get set }
    /// Starts closing the handle; idempotent. `EventLoop.shutdown()` calls it on every open handle.
    func close()
    /// Runs from the close callback, just before the retain taken at init is dropped.
    func didClose()
}

extension LoopHandleOwner {
    /// What every owner's `close()` does: once, runs `beforeClosing` (stop reading, spinning…), marks the owner
    /// closing and asks libuv to close the handle; the close callback (`onHandleClosed`) finishes. Idempotent.
    func closeHandle(_ beforeClosing: () -> Void = {}) {
        guard !self.isClosing else { return }
        beforeClosing()
        self.isClosing = true
        uv_close(self.uvHandle, onHandleClosed)
    }
}

/// Views any libuv handle (`uv_tcp_t`, `uv_timer_t`, …) as the `uv_handle_t` it starts with.
@inline(__always)
func asHandle<Handle>(_ pointer: UnsafeMutablePointer<Handle>) -> UnsafeMutablePointer<uv_handle_t> {
    UnsafeMutablePointer<uv_handle_t>(OpaquePointer(pointer))
}

/// Views a `uv_tcp_t` as the `uv_stream_t` it starts with.
@inline(__always)
func asStream(_ pointer: UnsafeMutablePointer<uv_tcp_t>) -> UnsafeMutablePointer<uv_stream_t> {
    UnsafeMutablePointer<uv_stream_t>(OpaquePointer(pointer))
}

/// Allocates never-moving memory for one zeroed libuv struct (handle or request).
@inline(__always)
func allocateZeroed<Struct>(_ value: Struct) -> UnsafeMutablePointer<Struct> {
    let pointer = UnsafeMutablePointer<Struct>.allocate(capacity: 1)
    pointer.initialize(to: value)
    return pointer
}

/// Allocates a zeroed libuv struct and runs its init on it (`uv_loop_init`, `uv_mutex_init`, …). When the init fails
/// the memory is freed again and the status thrown: a failed init needs no uv_close (libuv design rule 1), and
/// nothing else has seen the pointer.
func allocateInitialized<Struct>(
    _ zeroed: Struct, _ call: String, _ initialize: (UnsafeMutablePointer<Struct>) -> Int32
) throws(UVError) -> UnsafeMutablePointer<Struct> {
    let pointer = allocateZeroed(zeroed)
    let status = initialize(pointer)
    guard status >= 0 else {
        pointer.deallocate()
        throw UVError(code: status, call: call)
    }
    return pointer
}

/// A new handle on `loop` (`uv_timer_init(loop, handle)`, …), as `allocateInitialized`; throws first if the loop is
/// shut down. Its owner takes it over with `retainThroughData` once the owner is fully initialised.
@MainActor
func openHandle<Handle>(
    _ zeroed: Handle, on loop: EventLoop, _ call: String,
    _ initialize: (UnsafeMutablePointer<uv_loop_t>, UnsafeMutablePointer<Handle>) -> Int32
) throws(UVError) -> UnsafeMutablePointer<Handle> {
    try loop.checkOpen(call)
    return try allocateInitialized(zeroed, call) { initialize(loop.raw, $0) }
}

/// Takes the retain that keeps `owner` alive while libuv holds its handle (libuv design rule 3); `onHandleClosed`
/// gives it back.
@MainActor
func retainThroughData<Handle>(_ handle: UnsafeMutablePointer<Handle>, owner: some LoopHandleOwner) {
    let handle = asHandle(handle)
    handle.pointee.data = Unmanaged.passRetained(owner as AnyObject).toOpaque()
    EventLoop.owning(handle)?.openHandleCount += 1
}

/// The owner stored in a handle's `data`, without touching its retain count; nil once the close callback ran.
@inline(__always)
func owner<Owner: AnyObject>(of handle: UnsafeMutablePointer<uv_handle_t>?, as type: Owner.Type) -> Owner? {
    guard let data = handle?.pointee.data else { return nil }
    return Unmanaged<AnyObject>.fromOpaque(data).takeUnretainedValue() as? Owner
}

/// Calls `body(owner, argument)` on the main actor from a libuv callback: what `MainActor.assumeIsolated` promises
/// (a callback that arrives off the loop's thread, the main actor's, traps) for one thread comparison. Per call,
/// `assumeIsolated` asks the concurrency runtime and boxes its closure: about 450 instructions and a malloc, once per
/// read and once per loop turn (callgrind). `body` must capture nothing (`{ $0.didRead($1) }`), so that it has no
/// context to allocate; main-actor and plain functions of one signature share their representation, so the cast
/// calls it as it is.
@inline(__always)
func enterLoop<Owner: AnyObject, Argument>(
    _ handle: UnsafeMutablePointer<uv_handle_t>, _ owner: Owner, _ argument: Argument,
    _ body: @escaping @MainActor (Owner, Argument) -> Void
) {
    precondition(EventLoop.owning(handle)?.isOnLoopThread == true, "a libuv callback arrived off the loop's thread")
    unsafeBitCast(body, to: ((Owner, Argument) -> Void).self)(owner, argument)
}

/// The close callback of every handle: tells the owner, then drops the retain taken at init, which lets the owner's
/// deinit free the handle memory (never earlier than this callback).
///
/// Callbacks in this module read C pointers before entering the main actor and hand only Sendable values (the
/// owner objects are `@MainActor`, hence Sendable) into `MainActor.assumeIsolated` or, on the paths taken per read,
/// write or loop turn, `enterLoop`.
let onHandleClosed: uv_close_cb = { handle in
    guard let handle, let data = handle.pointee.data else { return }
    handle.pointee.data = nil
    let loop = EventLoop.owning(handle)
    let retained = Unmanaged<AnyObject>.fromOpaque(data)
    let owner = retained.takeUnretainedValue() as? any LoopHandleOwner
    MainActor.assumeIsolated {
        loop?.openHandleCount -= 1
        owner?.didClose()
    }
    retained.release()
}
