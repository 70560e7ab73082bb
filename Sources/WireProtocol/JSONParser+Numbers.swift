// JSON numbers: a fast path for short integers, grammar validation, exact Int64 integers, a fast exact path for short
// decimals (one IEEE operation on exact operands, which is correctly rounded), and the stdlib's correctly rounded
// Double(String) for everything else.

extension JSONParser {
    /// A number; `index` is at its `-` or first digit and ends just past it. O(length).
    @inline(__always)
    mutating func parseNumber() throws(WireError) -> JSONValue {
        // The usual case, an integer of at most 18 digits (which cannot overflow), without the general machinery;
        // anything else (including every error) starts over on the general path.
        if let integer = self.scanShortInteger() {
            let position = integer.end
            if position == self.bytes.count
                || (self.bytes[position] != UInt8(ascii: ".") && self.bytes[position] | 0x20 != UInt8(ascii: "e"))
            {
                self.index = position
                return .int(integer.value)
            }
            if self.bytes[position] == UInt8(ascii: "."), integer.digits <= 15,
                let value = self.parseShortFraction(
                    at: position, integerPart: integer.magnitude, integerDigits: integer.digits)
            {
                return .double(integer.isNegative ? -value : value)
            }
        }
        return try self.parseGeneralNumber()
    }

    /// A short integer at `index`: an optional `-`, then 1 to 18 digits (which cannot overflow) with no leading zero.
    /// Where its digits end (`index` is not moved), its magnitude, sign and digit count; nil for anything else. What
    /// may follow the digits is the caller's to check.
    @inline(__always)
    func scanShortInteger() -> (value: Int64, magnitude: Int64, isNegative: Bool, digits: Int, end: Int)? {
        var position = self.index
        let isNegative = position < self.bytes.count && self.bytes[position] == UInt8(ascii: "-")
        if isNegative { position &+= 1 }
        let digitsStart = position
        var magnitude: Int64 = 0
        while position < self.bytes.count {
            let digit = self.bytes[position] &- UInt8(ascii: "0")
            guard digit < 10 else { break }
            magnitude = magnitude &* 10 &+ Int64(digit)
            position &+= 1
        }
        let digits = position &- digitsStart
        guard digits > 0, digits <= 18, digits == 1 || self.bytes[digitsStart] != UInt8(ascii: "0") else { return nil }
        return (isNegative ? -magnitude : magnitude, magnitude, isNegative, digits, position)
    }

    /// The usual decimal: the fraction at `position` (its `.`) of a number whose integer part (valid, no sign) has
    /// the value `integerPart` and `integerDigits` digits, when the number has no exponent and at most 15 digits in
    /// all. Then both operands of the one division are exact, as on the general path, so the result is the same
    /// correctly rounded Double. Nil (with `index` unchanged) for anything else.
    @inline(never)
    private mutating func parseShortFraction(at position: Int, integerPart: Int64, integerDigits: Int) -> Double? {
        var position = position &+ 1
        let fractionStart = position
        var significand = integerPart
        while position < self.bytes.count {
            let digit = self.bytes[position] &- UInt8(ascii: "0")
            guard digit < 10 else { break }
            significand = significand &* 10 &+ Int64(digit)
            position &+= 1
        }
        let fractionDigits = position &- fractionStart
        guard fractionDigits > 0 && integerDigits &+ fractionDigits <= 15,
            position == self.bytes.count || self.bytes[position] | 0x20 != UInt8(ascii: "e")
        else { return nil }
        self.index = position
        return Double(significand) / Self.powerOfTen(fractionDigits)
    }

    /// Any number (see `parseNumber`): the grammar, exact integers, correctly rounded doubles. O(length).
    @inline(never)
    private mutating func parseGeneralNumber() throws(WireError) -> JSONValue {
        let start = self.index
        var position = start
        let isNegative = self.bytes[position] == UInt8(ascii: "-")
        if isNegative { position += 1 }

        // The decimal digits seen so far as one integer (while it fits), and the power of ten that scales it.
        var significand: UInt64 = 0
        var significandOverflowed = false
        var scale = 0

        // Integer part: "0" or a nonzero digit followed by digits.
        guard position < self.bytes.count, Self.isDigit(self.bytes[position]) else {
            throw .syntax(offset: position, reason: "expected a digit")
        }
        if self.bytes[position] == UInt8(ascii: "0") {
            position += 1
            if position < self.bytes.count && Self.isDigit(self.bytes[position]) {
                throw .syntax(offset: position, reason: "leading zeros are not allowed")
            }
        } else {
            while position < self.bytes.count && Self.isDigit(self.bytes[position]) {
                Self.accumulate(self.bytes[position], into: &significand, overflowed: &significandOverflowed)
                position += 1
            }
        }

        var isInteger = true
        if position < self.bytes.count && self.bytes[position] == UInt8(ascii: ".") {
            isInteger = false
            position += 1
            guard position < self.bytes.count, Self.isDigit(self.bytes[position]) else {
                throw .syntax(offset: position, reason: "expected a digit after the decimal point")
            }
            while position < self.bytes.count && Self.isDigit(self.bytes[position]) {
                Self.accumulate(self.bytes[position], into: &significand, overflowed: &significandOverflowed)
                if !significandOverflowed { scale -= 1 }
                position += 1
            }
        }

        if position < self.bytes.count && (self.bytes[position] | 0x20) == UInt8(ascii: "e") {
            isInteger = false
            position += 1
            var exponentIsNegative = false
            if position < self.bytes.count
                && (self.bytes[position] == UInt8(ascii: "+") || self.bytes[position] == UInt8(ascii: "-"))
            {
                exponentIsNegative = self.bytes[position] == UInt8(ascii: "-")
                position += 1
            }
            guard position < self.bytes.count, Self.isDigit(self.bytes[position]) else {
                throw .syntax(offset: position, reason: "expected a digit in the exponent")
            }
            var exponent = 0
            while position < self.bytes.count && Self.isDigit(self.bytes[position]) {
                // Clamped: only the fast path reads it, and it only needs to know "large".
                if exponent < 100_000 { exponent = exponent * 10 + Int(self.bytes[position] &- UInt8(ascii: "0")) }
                position += 1
            }
            scale += exponentIsNegative ? -exponent : exponent
        }
        self.index = position

        if isInteger && !significandOverflowed {
            if isNegative {
                if significand <= UInt64(Int64.max) { return .int(-Int64(significand)) }
                if significand == Int64.min.magnitude { return .int(.min) }
            } else if significand <= UInt64(Int64.max) {
                return .int(Int64(significand))
            }
        }

        // Clinger's fast path: both operands are exact Doubles, so one multiplication or division rounds correctly.
        if !significandOverflowed && significand <= 1 << 53 && scale >= -22 && scale <= 22 {
            let magnitude = Double(significand)
            let value = scale >= 0 ? magnitude * Self.powerOfTen(scale) : magnitude / Self.powerOfTen(-scale)
            return .double(isNegative ? -value : value)
        }

        let text = String(decoding: UnsafeBufferPointer(rebasing: self.bytes[start..<position]), as: UTF8.self)
        // The grammar was validated above, and the stdlib accepts every JSON number, so nil cannot happen.
        guard let value = Double(text) else { throw .syntax(offset: start, reason: "invalid number") }
        guard value.isFinite else { throw .numberOutOfRange(offset: start) }
        return .double(value)
    }

    @inline(__always)
    private static func isDigit(_ byte: UInt8) -> Bool {
        byte &- UInt8(ascii: "0") < 10
    }

    /// Appends one decimal digit to `significand`, or records that it no longer fits.
    @inline(__always)
    private static func accumulate(_ digit: UInt8, into significand: inout UInt64, overflowed: inout Bool) {
        guard !overflowed else { return }
        let (shifted, overflow1) = significand.multipliedReportingOverflow(by: 10)
        let (sum, overflow2) = shifted.addingReportingOverflow(UInt64(digit &- UInt8(ascii: "0")))
        if overflow1 || overflow2 { overflowed = true } else { significand = sum }
    }

    /// 10^exponent for 0...22, all exactly representable as Doubles (so these literals are exact).
    private static func powerOfTen(_ exponent: Int) -> Double {
        switch exponent {
        case 0: 1
        case 1: 1e1
        case 2: 1e2
        case 3: 1e3
        case 4: 1e4
        case 5: 1e5
        case 6: 1e6
        case 7: 1e7
        case 8: 1e8
        case 9: 1e9
        case 10: 1e10
        case 11: 1e11
        case 12: 1e12
        case 13: 1e13
        case 14: 1e14
        case 15: 1e15
        case 16: 1e16
        case 17: 1e17
        case 18: 1e18
        case 19: 1e19
        case 20: 1e20
        case 21: 1e21
        default: 1e22
        }
    }
}
