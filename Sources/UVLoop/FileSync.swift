// FileSync: fdatasync(2) of a descriptor on libuv's thread pool (`uv_fs_fdatasync`), so a slow disk does not hold up
// the loop; the completion runs on the loop. The pool's threads run only libuv's C code, never Swift, so a later
// fork() (a background snapshot) finds no Swift runtime lock held by another thread.

internal import CLibUV

extension EventLoop {
    /// Starts `fdatasync(descriptor)` on libuv's thread pool; `completion` runs on the loop afterwards, with nil or the
    /// error. The descriptor must stay open until then. An fsync in flight keeps the loop alive.
    public func syncInBackground(
        descriptor: Int32, completion: @escaping @MainActor (UVError?) -> Void
    ) throws(UVError) {
        try self.checkOpen("uv_fs_fdatasync")
        let request = allocateZeroed(uv_fs_t())
        let box = Unmanaged.passRetained(FileSyncCompletion(completion))
        request.pointee.data = box.toOpaque()
        let status = uv_fs_fdatasync(self.raw, request, descriptor, onFileSynced)
        guard status >= 0 else {
            box.release()
            uv_fs_req_cleanup(request)
            request.deallocate()
            throw UVError(code: status, call: "uv_fs_fdatasync")
        }
    }
}

/// The completion of one background fsync, retained through the request's `data` until it ran.
@MainActor
final class FileSyncCompletion {
    let run: @MainActor (UVError?) -> Void
    init(_ run: @escaping @MainActor (UVError?) -> Void) { self.run = run }
}

private let onFileSynced: uv_fs_cb = { request in
    guard let request, let data = request.pointee.data else { return }
    let result = Int32(truncatingIfNeeded: request.pointee.result)
    uv_fs_req_cleanup(request)
    request.deallocate()
    let completion = Unmanaged<FileSyncCompletion>.fromOpaque(data).takeRetainedValue()
    MainActor.assumeIsolated { completion.run(result < 0 ? UVError(code: result, call: "fdatasync") : nil) }
}
