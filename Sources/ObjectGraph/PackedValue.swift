// How an object stores a value in its bytes (GraphObject.swift): a tag byte, then the payload. Scalars, object
// references, strings up to 255 UTF-8 bytes and arrays of those (nested arrays too) are stored inline as long as the
// whole encoding fits `maxInlineSize`; anything else is boxed: the object keeps a counted reference to a `ValueBox`.
//
//     null, false, true   tag
//     int                 tag (int8/16/32/64: the narrowest that holds it, or the width already stored), 1/2/4/8 bytes
//     double              tag, 8 bytes
//     object              tag (object32/64), 4 or 8 bytes of id
//     string              tag, length (1 byte), UTF-8 bytes
//     array               tag, count (1 byte), the elements one after another, each tag + payload
//     boxed               tag, 8 bytes: an unmanaged, retained ValueBox (top level only, never inside an array)
//
// The bytes are the process's own (host byte order, unaligned); they are never written to disk.

/// A value stored out of line (see PackedValue).
final class ValueBox {
    /// Changed only by `GraphObject.takeValue`, which moves it out.
    var value: Value
    init(_ value: Value) { self.value = value }
}

enum PackedValue {
    enum Tag: UInt8 {
        case null, falseValue, trueValue, int8, int16, int32, int64, double, string, object32, object64, array, boxed
    }

    /// The largest inline encoding (tag included) of one stored value.
    static let maxInlineSize = 128
    /// The bytes a boxed value takes (tag and reference): the smallest region a large object's entry gets, so any
    /// value fits it boxed.
    static let boxedSize = 9

    /// The bytes `value` takes inline, or nil when it is stored boxed.
    @inline(__always)
    static func inlineSize(_ value: Value) -> Int? {
        switch value {
        case .null, .bool: return 1
        case .int(let number): return 1 + self.intWidth(number)
        case .double: return 9
        case .object(let id): return id >= 0 && id <= Int(UInt32.max) ? 5 : 9
        case .string(let text):
            let count = text.utf8.count
            return count <= 255 && count + 2 <= self.maxInlineSize ? count + 2 : nil
        case .array, .record: return self.size(value, budget: self.maxInlineSize)
        }
    }

    /// The encoding's size when it is inline and at most `budget` bytes.
    private static func size(_ value: Value, budget: Int) -> Int? {
        switch value {
        case .array(let elements):
            guard elements.count <= 255 else { return nil }
            var total = 2
            for element in elements {
                guard total < budget, let size = self.size(element, budget: budget - total) else { return nil }
                total += size
            }
            return total <= budget ? total : nil
        case .record:
            return nil
        default:
            guard let size = self.inlineSize(value), size <= budget else { return nil }
            return size
        }
    }

    @inline(__always)
    private static func intWidth(_ number: Int64) -> Int {
        if Int64(Int8.min)...Int64(Int8.max) ~= number { return 1 }
        if Int64(Int16.min)...Int64(Int16.max) ~= number { return 2 }
        if Int64(Int32.min)...Int64(Int32.max) ~= number { return 4 }
        return 8
    }

    /// Writes the inline encoding of `value` (which `inlineSize` accepted) at `pointer`; returns the bytes written.
    @discardableResult
    static func write(_ value: Value, at pointer: UnsafeMutableRawPointer) -> Int {
        switch value {
        case .null:
            pointer.storeBytes(of: Tag.null.rawValue, as: UInt8.self)
            return 1
        case .bool(let flag):
            pointer.storeBytes(of: (flag ? Tag.trueValue : Tag.falseValue).rawValue, as: UInt8.self)
            return 1
        case .int(let number):
            switch self.intWidth(number) {
            case 1:
                pointer.storeBytes(of: Tag.int8.rawValue, as: UInt8.self)
                pointer.storeBytes(of: Int8(truncatingIfNeeded: number), toByteOffset: 1, as: Int8.self)
                return 2
            case 2:
                pointer.storeBytes(of: Tag.int16.rawValue, as: UInt8.self)
                pointer.storeBytes(of: Int16(truncatingIfNeeded: number), toByteOffset: 1, as: Int16.self)
                return 3
            case 4:
                pointer.storeBytes(of: Tag.int32.rawValue, as: UInt8.self)
                pointer.storeBytes(of: Int32(truncatingIfNeeded: number), toByteOffset: 1, as: Int32.self)
                return 5
            default:
                pointer.storeBytes(of: Tag.int64.rawValue, as: UInt8.self)
                pointer.storeBytes(of: number, toByteOffset: 1, as: Int64.self)
                return 9
            }
        case .double(let number):
            pointer.storeBytes(of: Tag.double.rawValue, as: UInt8.self)
            pointer.storeBytes(of: number, toByteOffset: 1, as: Double.self)
            return 9
        case .object(let id):
            if id >= 0 && id <= Int(UInt32.max) {
                pointer.storeBytes(of: Tag.object32.rawValue, as: UInt8.self)
                pointer.storeBytes(of: UInt32(truncatingIfNeeded: id), toByteOffset: 1, as: UInt32.self)
                return 5
            }
            pointer.storeBytes(of: Tag.object64.rawValue, as: UInt8.self)
            pointer.storeBytes(of: Int64(id), toByteOffset: 1, as: Int64.self)
            return 9
        case .string(let text):
            pointer.storeBytes(of: Tag.string.rawValue, as: UInt8.self)
            let count = withUTF8(of: text) { bytes in
                if let start = bytes.baseAddress { (pointer + 2).copyMemory(from: start, byteCount: bytes.count) }
                return bytes.count
            }
            pointer.storeBytes(of: UInt8(truncatingIfNeeded: count), toByteOffset: 1, as: UInt8.self)
            return 2 + count
        case .array(let elements):
            pointer.storeBytes(of: Tag.array.rawValue, as: UInt8.self)
            pointer.storeBytes(of: UInt8(truncatingIfNeeded: elements.count), toByteOffset: 1, as: UInt8.self)
            var offset = 2
            for element in elements { offset += self.write(element, at: pointer + offset) }
            return offset
        case .record:
            preconditionFailure("a record is never stored inline")
        }
    }

    /// Decodes the inline value at `pointer` (not a boxed one); returns it and the bytes it takes.
    static func read(at pointer: UnsafeRawPointer) -> (value: Value, size: Int) {
        switch Tag(rawValue: pointer.load(as: UInt8.self)) {
        case .null: return (.null, 1)
        case .falseValue: return (.bool(false), 1)
        case .trueValue: return (.bool(true), 1)
        case .int8: return (.int(Int64(pointer.loadUnaligned(fromByteOffset: 1, as: Int8.self))), 2)
        case .int16: return (.int(Int64(pointer.loadUnaligned(fromByteOffset: 1, as: Int16.self))), 3)
        case .int32: return (.int(Int64(pointer.loadUnaligned(fromByteOffset: 1, as: Int32.self))), 5)
        case .int64: return (.int(pointer.loadUnaligned(fromByteOffset: 1, as: Int64.self)), 9)
        case .double: return (.double(pointer.loadUnaligned(fromByteOffset: 1, as: Double.self)), 9)
        case .object32: return (.object(Int(pointer.loadUnaligned(fromByteOffset: 1, as: UInt32.self))), 5)
        case .object64: return (.object(Int(pointer.loadUnaligned(fromByteOffset: 1, as: Int64.self))), 9)
        case .string:
            let count = Int(pointer.load(fromByteOffset: 1, as: UInt8.self))
            let text = String(decoding: UnsafeRawBufferPointer(start: pointer + 2, count: count), as: UTF8.self)
            return (.string(text), 2 + count)
        case .array:
            let count = Int(pointer.load(fromByteOffset: 1, as: UInt8.self))
            var elements: [Value] = []
            elements.reserveCapacity(count)
            var offset = 2
            for _ in 0..<count {
                let (element, size) = self.read(at: pointer + offset)
                elements.append(element)
                offset += size
            }
            return (.array(elements), offset)
        case .boxed, nil:
            preconditionFailure("not an inline value")
        }
    }

    /// Calls `body` with each object id the inline value at `pointer` refers to; returns the bytes it takes.
    @discardableResult
    static func forEachReference(at pointer: UnsafeRawPointer, _ body: (ObjectID) -> Void) -> Int {
        switch Tag(rawValue: pointer.load(as: UInt8.self)) {
        case .null, .falseValue, .trueValue: return 1
        case .int8: return 2
        case .int16: return 3
        case .int32: return 5
        case .int64, .double: return 9
        case .object32:
            body(Int(pointer.loadUnaligned(fromByteOffset: 1, as: UInt32.self)))
            return 5
        case .object64:
            body(Int(pointer.loadUnaligned(fromByteOffset: 1, as: Int64.self)))
            return 9
        case .string: return 2 + Int(pointer.load(fromByteOffset: 1, as: UInt8.self))
        case .array:
            let count = Int(pointer.load(fromByteOffset: 1, as: UInt8.self))
            var offset = 2
            for _ in 0..<count { offset += self.forEachReference(at: pointer + offset, body) }
            return offset
        case .boxed, nil:
            preconditionFailure("not an inline value")
        }
    }
}

/// Calls `body` with the UTF-8 bytes of `text` (no copy for native strings; small ones are spilled to the stack).
@inline(__always)
func withUTF8<R>(of text: String, _ body: (UnsafeRawBufferPointer) -> R) -> R {
    if let result = text.utf8.withContiguousStorageIfAvailable({ body(UnsafeRawBufferPointer($0)) }) {
        return result
    }
    var copy = text
    return copy.withUTF8 { body(UnsafeRawBufferPointer($0)) }
}
