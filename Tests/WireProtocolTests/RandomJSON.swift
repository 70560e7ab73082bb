// Test-only helpers shared by several suites: a generator of random JSON values (from TestSupport's seeded random
// number generator) (all kinds, nasty strings, extreme numbers), so failures reproduce from the seed alone.

import WireProtocol
import TestSupport

/// Builds random JSON values from a seed.
struct RandomJSON {
    var generator: SeededRandom
    /// Whether strings may contain U+FEFF (which Foundation mishandles, see FoundationDifferentialTests).
    let includesByteOrderMark: Bool

    init(seed: UInt64, includesByteOrderMark: Bool = true) {
        self.generator = SeededRandom(seed: seed)
        self.includesByteOrderMark = includesByteOrderMark
    }

    /// A random finite double from a random bit pattern (so subnormals, huge and tiny magnitudes all appear).
    mutating func finiteDouble() -> Double {
        while true {
            let value = Double(bitPattern: self.generator.next())
            if value.isFinite { return value }
        }
    }

    mutating func int() -> Int64 {
        switch Int.random(in: 0..<6, using: &self.generator) {
        case 0: [Int64.min, Int64.max, 0, -1, 1, Int64.min + 1].randomElement(using: &self.generator)!
        case 1: Int64(bitPattern: self.generator.next())
        default: Int64.random(in: -100_000...100_000, using: &self.generator)
        }
    }

    mutating func double() -> Double {
        switch Int.random(in: 0..<4, using: &self.generator) {
        case 0:
            [0.0, -0.0, 0.1, 1.5, 1e300, .leastNonzeroMagnitude, .greatestFiniteMagnitude, 42.0].randomElement(
                using: &self.generator)!
        case 1: Double(Int.random(in: -1_000_000...1_000_000, using: &self.generator)) / 100
        default: self.finiteDouble()
        }
    }

    mutating func string() -> String {
        var pool: [Unicode.Scalar] = [
            "a", "b", "z", "0", " ", "\"", "\\", "/", "\n", "\r", "\t", "\u{0}", "\u{1}", "\u{8}", "\u{C}", "\u{1F}",
            "\u{7F}", "\u{80}", "é", "ß", "\u{2028}", "中", "文", "\u{FFFD}", "\u{FEFF}", "😀", "\u{10FFFF}", "𝄞",
        ]
        if !self.includesByteOrderMark { pool.removeAll { $0 == "\u{FEFF}" } }
        let length = Int.random(in: 0..<12, using: &self.generator)
        var scalars = String.UnicodeScalarView()
        for _ in 0..<length {
            if Bool.random(using: &self.generator) {
                scalars.append(Unicode.Scalar(UInt8.random(in: 0x20..<0x7F, using: &self.generator)))
            } else {
                scalars.append(pool.randomElement(using: &self.generator)!)
            }
        }
        return String(scalars)
    }

    /// A random value nested at most `depth` more levels.
    mutating func value(depth: Int) -> JSONValue {
        let kinds = depth > 0 ? 8 : 6
        switch Int.random(in: 0..<kinds, using: &self.generator) {
        case 0: return .null
        case 1: return .bool(Bool.random(using: &self.generator))
        case 2: return .int(self.int())
        case 3: return .double(self.double())
        case 4, 5: return .string(self.string())
        case 6:
            let count = Int.random(in: 0..<5, using: &self.generator)
            return .array((0..<count).map { _ in self.value(depth: depth - 1) })
        default:
            var object = JSONObject()
            for _ in 0..<Int.random(in: 0..<5, using: &self.generator) {
                object[self.string()] = self.value(depth: depth - 1)
            }
            return .object(object)
        }
    }

    /// A random array or object (so every proper prefix of its text is invalid JSON).
    mutating func container(depth: Int) -> JSONValue {
        while true {
            let candidate = self.value(depth: depth)
            switch candidate {
            case .array, .object: return candidate
            default: continue
            }
        }
    }
}

/// The UTF-8 bytes of `text`.
func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }

/// True when two values are equal and every double has the same bit pattern (so -0.0 differs from 0.0).
func identical(_ lhs: JSONValue, _ rhs: JSONValue) -> Bool {
    switch (lhs, rhs) {
    case (.double(let left), .double(let right)): return left.bitPattern == right.bitPattern
    case (.array(let left), .array(let right)):
        return left.count == right.count && zip(left, right).allSatisfy { identical($0, $1) }
    case (.object(let left), .object(let right)):
        return left.keys == right.keys && zip(left.values, right.values).allSatisfy { identical($0, $1) }
    default: return lhs == rhs
    }
}
