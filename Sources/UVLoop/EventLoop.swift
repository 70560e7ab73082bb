// EventLoop: one private uv_loop_t, driven on the main actor, plus the loop-wide read buffer and the orderly
// shutdown that closes every handle before uv_loop_close. Handles live in their own files; this file only walks them.

internal import CLibUV

#if canImport(Glibc)
internal import Glibc
#elseif canImport(Darwin)
internal import Darwin
#endif

/// Loop-owned. A libuv event loop of its own (never the default loop), run on the main actor's thread.
///
/// Every handle object keeps its loop alive, so the loop's memory goes only after the last of them is gone. Call
/// `shutdown()` once when done: it closes what is still open and reports whether libuv released everything.
@MainActor
public final class EventLoop {
    // The two pointers below are nonisolated(unsafe) only so the (nonisolated) deinit can free them; every other
    // use is on the main actor.

    /// The libuv loop; its `data` points back at this object (unretained: handles retain the loop instead).
    nonisolated(unsafe) let raw: UnsafeMutablePointer<uv_loop_t>
    /// One read buffer for every stream on this loop: libuv calls alloc → read → read_cb back to back on the loop
    /// thread, so no two reads can hold it at once.
    nonisolated(unsafe) let readBuffer: UnsafeMutableRawBufferPointer
    /// Handles that were opened and whose close callback has not run yet.
    var openHandleCount = 0
    /// Set when `shutdown()` starts; afterwards no new handle may be opened and, once it returns, no libuv call may
    /// touch `raw` except from deinit.
    private(set) var isShutDown = false
    /// Whether `uv_loop_close` succeeded, so the loop memory may be freed; also what `shutdown()` returned.
    private var isLoopClosed = false
    /// The clock as last read before shutdown; `uv_now` must not touch a closed loop.
    private var clockAtShutdown: UInt64 = 0
    /// The loop's busy poll, while one is open (`BusyPoll`; it clears this when it closes): told of every read.
    var busyPoll: BusyPoll?
    /// The thread the loop was made on, the main actor's: every callback must arrive on it (`enterLoop`).
    nonisolated let thread: pthread_t

    /// The size of the shared read buffer (libuv's suggested 64 KiB).
    static let readBufferBytes = 64 * 1024

    /// Ignores SIGPIPE for the whole process, once, so a write to a closed socket fails with EPIPE instead of
    /// killing the process.
    private static let ignoreBrokenPipeSignal: Void = {
        _ = signal(SIGPIPE, SIG_IGN)
    }()

    /// Creates and initialises a fresh loop (`uv_loop_init`).
    public init() throws(UVError) {
        Self.ignoreBrokenPipeSignal
        let raw = try allocateInitialized(uv_loop_t(), "uv_loop_init") { uv_loop_init($0) }
        self.raw = raw
        self.readBuffer = .allocate(byteCount: Self.readBufferBytes, alignment: 16)
        self.thread = pthread_self()
        raw.pointee.data = Unmanaged.passUnretained(self).toOpaque()
    }

    deinit {
        // Handle objects retain their loop until their close callback, so when this runs every handle has closed
        // and uv_loop_close succeeds even if shutdown() was skipped. Should it still report EBUSY, leaking the loop
        // is safer than freeing memory libuv may touch.
        if self.isLoopClosed || uv_loop_close(self.raw) == 0 {
            self.raw.deallocate()
        }
        self.readBuffer.deallocate()
    }

    /// The EventLoop that owns `handle`'s loop.
    nonisolated static func owning(_ handle: UnsafeMutablePointer<uv_handle_t>) -> EventLoop? {
        guard let data = handle.pointee.loop?.pointee.data else { return nil }
        return Unmanaged<EventLoop>.fromOpaque(data).takeUnretainedValue()
    }

    /// Whether the caller runs on the loop's thread (the main actor's).
    nonisolated var isOnLoopThread: Bool { pthread_equal(pthread_self(), self.thread) != 0 }

    /// Throws `UVError(UV_EINVAL, call)` after `shutdown()`: a closed loop takes no new handles.
    func checkOpen(_ call: String) throws(UVError) {
        if self.isShutDown { throw UVError.closed(call) }
    }

    /// Tells the busy poll, if there is one, of a read that delivered bytes.
    @inline(__always)
    func noteRead() {
        self.busyPoll?.didRead()
    }

    // MARK: - Running

    /// Runs the loop (`UV_RUN_DEFAULT`) until `stop()` is called or no referenced handle or request is active.
    public func run() {
        precondition(!self.isShutDown, "EventLoop.run() after shutdown()")
        // uv_run's result is "were handles still active when it stopped", not a status.
        _ = uv_run(self.raw, UV_RUN_DEFAULT)
    }

    /// Runs one iteration: `UV_RUN_ONCE` blocks for I/O if nothing is ready, `UV_RUN_NOWAIT` polls without blocking.
    /// Returns whether referenced handles or requests are still active (more iterations have work to do).
    @discardableResult
    public func runOnce(nowait: Bool) -> Bool {
        precondition(!self.isShutDown, "EventLoop.runOnce(nowait:) after shutdown()")
        return uv_run(self.raw, nowait ? UV_RUN_NOWAIT : UV_RUN_ONCE) != 0
    }

    /// Makes `run()` return at the end of the current iteration (`uv_stop`).
    public func stop() {
        guard !self.isShutDown else { return }
        uv_stop(self.raw)
    }

    /// The loop's cached clock in milliseconds (`uv_now`), refreshed at the start of every iteration.
    public var nowMilliseconds: UInt64 { self.isShutDown ? self.clockAtShutdown : uv_now(self.raw) }

    /// A precise monotonic clock in nanoseconds (`uv_hrtime`), read anew at each call: for measuring work within a
    /// loop turn, which the cached `nowMilliseconds` cannot.
    public var monotonicNanoseconds: UInt64 { uv_hrtime() }

    /// Refreshes the cached clock (`uv_update_time`) before a long computation reads `nowMilliseconds`.
    public func updateTime() {
        guard !self.isShutDown else { return }
        uv_update_time(self.raw)
    }

    // MARK: - Shutdown

    /// Closes every still-open handle, runs the loop until their close callbacks ran, then `uv_loop_close`.
    /// Returns true when `uv_loop_close` returned 0 (libuv's MAKE_VALGRIND_HAPPY). Call it after `run()` returned,
    /// never from a loop callback. Safe to call once; a repeated call does nothing and returns the first result.
    public func shutdown() -> Bool {
        guard !self.isShutDown else { return self.isLoopClosed }
        // Set first: from here on no new handle may be opened, even by an onClose callback run below.
        self.isShutDown = true
        // More than one pass only when a pending stop() makes the first uv_run return at once.
        self.clockAtShutdown = uv_now(self.raw)
        var status = uv_loop_close(self.raw)
        var pass = 0
        while status == UV_EBUSY.rawValue && pass < 16 {
            uv_walk(self.raw, onWalkClose, nil)
            _ = uv_run(self.raw, UV_RUN_DEFAULT)
            self.clockAtShutdown = uv_now(self.raw)
            status = uv_loop_close(self.raw)
            pass += 1
        }
        self.isLoopClosed = status == 0
        return self.isLoopClosed
    }
}

/// uv_walk callback for `shutdown()`: closes one user handle through its owner so the owner's state stays right.
private let onWalkClose: uv_walk_cb = { handle, _ in
    guard let handle, uv_is_closing(handle) == 0 else { return }
    if let owner = owner(of: handle, as: AnyObject.self) as? any LoopHandleOwner {
        MainActor.assumeIsolated { owner.close() }
    } else {
        // Not ours (no owner in data): close it bare so the loop can still be released.
        uv_close(handle, nil)
    }
}
