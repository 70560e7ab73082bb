// An incremental UTF-8 validator (RFC 3629): fed a message's bytes in any number of pieces, it rejects overlong
// forms, surrogates (U+D800-DFFF) and scalars above U+10FFFF at the first byte that proves them wrong, and knows at
// the end whether a sequence was left unfinished. Used for text messages and close reasons.

/// Validates UTF-8 across arbitrary splits. A sequence cut between two pieces (or two fragments) continues where
/// it stopped.
struct UTF8Validator: Sendable {
    /// Continuation bytes still expected for the current scalar.
    private var pending: UInt8 = 0
    /// The allowed range of the next continuation byte. Narrower than 0x80...0xBF only right after the lead bytes
    /// E0 (overlong), ED (surrogates), F0 (overlong) and F4 (beyond U+10FFFF).
    private var lower: UInt8 = 0x80
    private var upper: UInt8 = 0xBF

    /// Whether every scalar seen so far is complete: the bytes fed form valid UTF-8 when this is true and no
    /// `validate` call returned false.
    var isComplete: Bool { self.pending == 0 }

    /// Checks `bytes` as the continuation of what was fed before; returns false at the first invalid byte (the
    /// validator is then unusable until `reset`).
    mutating func validate(_ bytes: UnsafeRawBufferPointer) -> Bool {
        guard let base = bytes.baseAddress else { return true }
        let count = bytes.count
        var index = 0
        while index < count {
            // ASCII runs, eight bytes at a time, whenever no scalar is open.
            if self.pending == 0 {
                while index + 8 <= count,
                    base.loadUnaligned(fromByteOffset: index, as: UInt64.self) & 0x8080_8080_8080_8080 == 0
                {
                    index += 8
                }
                if index == count { break }
            }
            let byte = base.load(fromByteOffset: index, as: UInt8.self)
            index += 1
            if self.pending > 0 {
                guard byte >= self.lower && byte <= self.upper else { return false }
                self.pending -= 1
                self.lower = 0x80
                self.upper = 0xBF
                continue
            }
            switch byte {
            case 0x00...0x7F: continue
            case 0xC2...0xDF: self.pending = 1
            case 0xE0:
                self.pending = 2
                self.lower = 0xA0
            case 0xE1...0xEC, 0xEE...0xEF: self.pending = 2
            case 0xED:
                self.pending = 2
                self.upper = 0x9F
            case 0xF0:
                self.pending = 3
                self.lower = 0x90
            case 0xF1...0xF3: self.pending = 3
            case 0xF4:
                self.pending = 3
                self.upper = 0x8F
            default: return false  // 80-BF (stray continuation), C0-C1 (overlong), F5-FF (beyond U+10FFFF)
            }
        }
        return true
    }

    /// Forgets any open sequence, for the next message.
    mutating func reset() {
        self = UTF8Validator()
    }

    /// Whether `bytes` alone are valid, complete UTF-8.
    static func isValid(_ bytes: UnsafeRawBufferPointer) -> Bool {
        var validator = UTF8Validator()
        return validator.validate(bytes) && validator.isComplete
    }
}
