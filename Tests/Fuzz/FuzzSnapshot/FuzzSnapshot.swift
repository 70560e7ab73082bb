// Fuzz target: the binary snapshot decoder (Sources/Persistence/BinarySnapshotCodec.swift). The input is taken as a
// snapshot's body: the harness puts the magic in front and a correct checksum behind, so the fuzzer explores the
// structure rather than the CRC. Whatever decodes must re-encode to bytes that decode to the same snapshot, and
// restoring it into a graph must either succeed or throw — never trap. Docs: docs/RELIABILITY.md.
import FuzzSupport
import ObjectGraph
import Persistence

@main
enum FuzzSnapshot {
    static let magic = Array("KVODSNAP".utf8)

    static func main() {
        FuzzDriver.run { input in
            var bytes = Self.magic
            bytes.append(contentsOf: input)
            let crc = bytes.withUnsafeBytes(CRC32.checksum)
            for shift in 0..<4 { bytes.append(UInt8(truncatingIfNeeded: crc >> UInt32(shift * 8))) }
            guard let snapshot = try? BinarySnapshotCodec.decode(bytes) else { return }
            let again = BinarySnapshotCodec.encode(snapshot)
            guard let decodedAgain = try? BinarySnapshotCodec.decode(again) else {
                fatalError("a decoded snapshot does not decode after re-encoding")
            }
            check(decodedAgain == snapshot, "a snapshot changed through encode and decode")
            _ = try? Graph(model: .open, snapshot: snapshot)
        }
    }
}
