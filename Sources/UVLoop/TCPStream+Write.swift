// The write side of TCPStream: direct writes with uv_try_write, the remainder queued with uv_write in one
// [uv_write_t | payload] block per write (or, for a buffer handed over, behind a [uv_write_t | owner] block without a
// copy), write-queue accounting for onWritesDrained, and the uv_shutdown half-close.
#if canImport(Glibc)
import Glibc
#endif
internal import CLibUV

extension TCPStream {
    // MARK: - Writing

    /// Writes `bytes`: first `uv_try_write`; only the remainder is copied and queued with `uv_write`, so the caller's
    /// memory may be reused as soon as this returns. Returns how many bytes went to the socket immediately.
    ///
    /// Order is preserved: nothing is tried directly while earlier bytes are queued. Errors other than EAGAIN (EPIPE,
    /// ECONNRESET, …) are reported through `onEnd` (once) and later writes are dropped; after `close()` or
    /// `shutdownWrites(_:)` writes are dropped silently.
    @discardableResult
    public func write(_ bytes: UnsafeRawBufferPointer) -> Int {
        guard let base = bytes.baseAddress, bytes.count > 0, !self.isClosing, !self.hasWriteFailed,
            !self.isShutDownForWrites
        else { return 0 }
        var written = 0
        if self.pendingWriteBytes == 0 {
            var buffer = uv_buf_t(base: UnsafeMutablePointer(mutating: base.assumingMemoryBound(to: CChar.self)),
                                  len: bytes.count)
            let status = uv_try_write(self.stream, &buffer, 1)
            if status >= 0 {
                written = Int(status)
            } else if status != UV_EAGAIN.rawValue {
                self.failWrites(UVError(code: status, call: "uv_try_write"))
                return 0
            }
        }
        if written < bytes.count {
            self.enqueue(UnsafeRawBufferPointer(rebasing: bytes[written...]))
        }
        return written
    }

    /// Writes the `count` bytes at `base` as `write(_:)` does, taking their memory over (it must come from `malloc`):
    /// what `uv_try_write` does not take is queued as it is, without a copy, and the memory is freed once written
    /// (at once when nothing is left to write, or when the write cannot be made). For a large buffer, so that it never
    /// exists twice. Returns how many bytes went to the socket immediately.
    @discardableResult
    public func write(adopting base: UnsafeMutableRawPointer, count: Int) -> Int {
        guard count > 0, !self.isClosing, !self.hasWriteFailed, !self.isShutDownForWrites else {
            free(base)
            return 0
        }
        var written = 0
        if self.pendingWriteBytes == 0 {
            var buffer = uv_buf_t(base: base.assumingMemoryBound(to: CChar.self), len: count)
            let status = uv_try_write(self.stream, &buffer, 1)
            if status >= 0 {
                written = Int(status)
            } else if status != UV_EAGAIN.rawValue {
                free(base)
                self.failWrites(UVError(code: status, call: "uv_try_write"))
                return 0
            }
        }
        guard written < count else {
            free(base)
            return written
        }
        let headerBytes = MemoryLayout<uv_write_t>.stride
        let block = UnsafeMutableRawPointer.allocate(
            byteCount: headerBytes + MemoryLayout<UnsafeMutableRawPointer>.stride,
            alignment: MemoryLayout<uv_write_t>.alignment)
        let request = block.bindMemory(to: uv_write_t.self, capacity: 1)
        request.initialize(to: uv_write_t())
        (block + headerBytes).storeBytes(of: base, as: UnsafeMutableRawPointer.self)
        var buffer = uv_buf_t(base: (base + written).assumingMemoryBound(to: CChar.self), len: count - written)
        let status = uv_write(request, self.stream, &buffer, 1, onAdoptedWriteCompleted)
        guard status >= 0 else {
            block.deallocate()
            free(base)
            self.failWrites(UVError(code: status, call: "uv_write"))
            return written
        }
        self.writesInFlight += 1
        return written
    }

    /// Writes `bytes` (see `write(_:)` for the raw-buffer version).
    public func write(_ bytes: [UInt8]) {
        bytes.withUnsafeBytes { _ = self.write($0) }
    }

    /// Bytes accepted by `write` but not yet handed to the kernel (`uv_stream_get_write_queue_size`).
    public var pendingWriteBytes: Int { uv_stream_get_write_queue_size(self.stream) }

    /// Copies `bytes` behind a fresh `uv_write_t` in one allocation and queues it; the write callback frees it.
    private func enqueue(_ bytes: UnsafeRawBufferPointer) {
        let headerBytes = MemoryLayout<uv_write_t>.stride
        let block = UnsafeMutableRawPointer.allocate(
            byteCount: headerBytes + bytes.count, alignment: MemoryLayout<uv_write_t>.alignment)
        let request = block.bindMemory(to: uv_write_t.self, capacity: 1)
        request.initialize(to: uv_write_t())
        let payload = block + headerBytes
        payload.copyMemory(from: bytes.baseAddress!, byteCount: bytes.count)  // callers pass non-empty buffers
        // uv_write copies this uv_buf_t array but not the bytes, which stay in `block` until the callback.
        var buffer = uv_buf_t(base: payload.assumingMemoryBound(to: CChar.self), len: bytes.count)
        let status = uv_write(request, self.stream, &buffer, 1, onWriteCompleted)
        guard status >= 0 else {
            // A failed request never calls its callback (libuv errors.rst), so it is freed here.
            block.deallocate()
            self.failWrites(UVError(code: status, call: "uv_write"))
            return
        }
        self.writesInFlight += 1
    }

    /// Handles one write callback (its request is already freed).
    fileprivate func didWrite(_ status: Int32) {
        self.writesInFlight -= 1
        // ECANCELED: the stream is closing and libuv is flushing its queue; nothing is reported after close().
        guard !self.isClosing else { return }
        if status < 0 {
            self.failWrites(UVError(code: status, call: "uv_write"))
        } else if self.writesInFlight == 0 {
            self.onWritesDrained?()
        }
    }

    /// Marks writes as failed and reports the error through `onEnd` (which fires at most once).
    private func failWrites(_ error: UVError) {
        self.hasWriteFailed = true
        self.end(error)
    }

    // MARK: - Half-close

    /// Half-closes after queued writes are flushed (`uv_shutdown`); then the caller usually calls `close()`. Later
    /// writes are dropped.
    ///
    /// `done` runs once from the loop when the shutdown finished, successfully or not (a flush error also goes to
    /// `onEnd`). If libuv refuses the request (already shut down, never writable) `done` runs before this returns.
    /// Nothing runs if the stream is closing or closes first.
    public func shutdownWrites(_ done: (@MainActor () -> Void)?) {
        guard !self.isClosing else { return }
        self.isShutDownForWrites = true
        let request = allocateZeroed(uv_shutdown_t())
        let status = uv_shutdown(request, self.stream, onShutdownCompleted)
        guard status >= 0 else {
            // Not a connection error (the socket is fine, only this request is pointless): no onEnd.
            request.deallocate()
            done?()
            return
        }
        self.shutdownCompletion = done
    }

    /// Handles the shutdown callback (its request is already freed).
    fileprivate func didShutdown(_ status: Int32) {
        guard !self.isClosing else { return }
        let done = self.shutdownCompletion
        self.shutdownCompletion = nil
        if status < 0 {
            self.end(UVError(code: status, call: "uv_shutdown"))
        }
        done?()
    }
}

// MARK: - C callbacks

private let onWriteCompleted: uv_write_cb = { request, status in
    // `status` is checked in didWrite, after the block is freed: it goes whatever the status.
    guard let request else { return }
    let handle = request.pointee.handle
    UnsafeMutableRawPointer(request).deallocate()  // the [uv_write_t | payload] block from enqueue
    guard let handle = handle.map(asHandle), let stream = owner(of: handle, as: TCPStream.self) else { return }
    enterLoop(handle, stream, status) { $0.didWrite($1) }
}

private let onAdoptedWriteCompleted: uv_write_cb = { request, status in
    guard let request else { return }
    let handle = request.pointee.handle
    let block = UnsafeMutableRawPointer(request)  // the [uv_write_t | owner] block from write(adopting:count:)
    free(block.load(fromByteOffset: MemoryLayout<uv_write_t>.stride, as: UnsafeMutableRawPointer.self))
    block.deallocate()
    guard let handle = handle.map(asHandle), let stream = owner(of: handle, as: TCPStream.self) else { return }
    enterLoop(handle, stream, status) { $0.didWrite($1) }
}

private let onShutdownCompleted: uv_shutdown_cb = { request, status in
    guard let request else { return }
    let handle = request.pointee.handle
    request.deallocate()
    guard let stream = owner(of: handle.map(asHandle), as: TCPStream.self) else { return }
    MainActor.assumeIsolated { stream.didShutdown(status) }
}
