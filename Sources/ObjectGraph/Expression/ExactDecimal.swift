// Exact decimal digits of a double, for `%.Nf` and `round(x, digits)`. A finite double is m·2^e, which always has a
// finite decimal expansion; we compute all of it with a small base-10^9 bignum, then round half away from zero at
// the requested place. This is correct rounding of the stored binary value (2.675 is 2.67499999…, so it gives 2.67),
// without Foundation or libc's printf.

/// The exact decimal value of a finite double: `±0.d₁d₂…dₙ × 10^pointPosition`.
struct ExactDecimal: Equatable {
    /// Decimal digits 0...9, most significant first, without leading or trailing zeros; empty for zero.
    var digits: [UInt8]
    /// The decimal point sits after this many digits; a negative value means that many zeros precede the digits.
    var pointPosition: Int
    /// The sign bit of the double (so -0.0 and values that round to zero keep their minus, as in C).
    var isNegative: Bool

    private static let limbBase: UInt64 = 1_000_000_000

    /// The exact expansion of `value`, which must be finite.
    init(_ value: Double) {
        precondition(value.isFinite, "ExactDecimal needs a finite double")
        self.isNegative = value.sign == .minus
        self.digits = []
        self.pointPosition = 0
        let magnitude = value.magnitude
        if magnitude == 0 { return }
        var significand: UInt64
        var exponent: Int
        if magnitude.exponentBitPattern == 0 {
            significand = magnitude.significandBitPattern
            exponent = -1074
        } else {
            significand = 1 << 52 | magnitude.significandBitPattern
            exponent = Int(magnitude.exponentBitPattern) - 1075
        }
        while significand & 1 == 0 && exponent < 0 {
            significand >>= 1
            exponent += 1
        }
        // value = significand · 2^exponent; for a negative exponent that is significand · 5^-exponent / 10^-exponent.
        var limbs = [significand % Self.limbBase, significand / Self.limbBase]  // significand < 2^53 < 10^18
        var fractionDigits = 0
        if exponent >= 0 {
            Self.multiply(&limbs, byPowerOf: 2, exponent: exponent, chunkExponent: 29)
        } else {
            Self.multiply(&limbs, byPowerOf: 5, exponent: -exponent, chunkExponent: 13)
            fractionDigits = -exponent
        }
        var all = Self.decimalDigits(of: limbs)
        self.pointPosition = all.count - fractionDigits
        while all.last == 0 { all.removeLast() }
        self.digits = all
    }

    private init(digits: [UInt8], pointPosition: Int, isNegative: Bool) {
        self.digits = digits
        self.pointPosition = pointPosition
        self.isNegative = isNegative
    }

    /// Multiplies little-endian base-10^9 limbs by base^exponent, `chunkExponent` powers at a time (base^chunk must
    /// stay below 2^31 so that a limb times it plus a carry fits in 64 bits).
    private static func multiply(_ limbs: inout [UInt64], byPowerOf base: UInt64, exponent: Int, chunkExponent: Int) {
        var remaining = exponent
        while remaining > 0 {
            let step = Swift.min(remaining, chunkExponent)
            remaining -= step
            var factor: UInt64 = 1
            for _ in 0..<step { factor *= base }
            var carry: UInt64 = 0
            for index in limbs.indices {
                let product = limbs[index] * factor + carry
                limbs[index] = product % Self.limbBase
                carry = product / Self.limbBase
            }
            while carry > 0 {
                limbs.append(carry % Self.limbBase)
                carry /= Self.limbBase
            }
        }
    }

    private static func decimalDigits(of limbs: [UInt64]) -> [UInt8] {
        var digits: [UInt8] = []
        for limb in limbs.reversed() {
            var chunk = [UInt8](repeating: 0, count: 9)
            var rest = limb
            for index in stride(from: 8, through: 0, by: -1) {
                chunk[index] = UInt8(rest % 10)
                rest /= 10
            }
            digits.append(contentsOf: chunk)
        }
        guard let first = digits.firstIndex(where: { $0 != 0 }) else { return [] }
        return Array(digits[first...])
    }

    /// The value rounded half away from zero to `places` digits after the point (negative: tens, hundreds, ...).
    func rounded(toPlaces places: Int) -> ExactDecimal {
        let keep = self.pointPosition + places
        if keep >= self.digits.count { return self }
        if keep < 0 { return ExactDecimal(digits: [], pointPosition: 0, isNegative: self.isNegative) }
        var kept = Array(self.digits[0..<keep])
        var point = self.pointPosition
        if self.digits[keep] >= 5 {
            var index = kept.count - 1
            while index >= 0 && kept[index] == 9 {
                kept[index] = 0
                index -= 1
            }
            if index >= 0 {
                kept[index] += 1
            } else {
                kept.insert(1, at: 0)
                point += 1
            }
        }
        while kept.last == 0 { kept.removeLast() }
        return ExactDecimal(digits: kept, pointPosition: kept.isEmpty ? 0 : point, isNegative: self.isNegative)
    }

    /// Fixed-point text with exactly `places` digits after the point (none and no point for 0), e.g. "-12.50".
    /// Digits beyond `places` are cut, so round first.
    func fixedText(places: Int) -> String {
        var text: [UInt8] = self.isNegative ? [UInt8(ascii: "-")] : []
        if self.pointPosition <= 0 {
            text.append(UInt8(ascii: "0"))
        } else {
            for index in 0..<self.pointPosition { text.append(self.digitCharacter(at: index)) }
        }
        if places > 0 {
            text.append(UInt8(ascii: "."))
            for index in 0..<places { text.append(self.digitCharacter(at: self.pointPosition + index)) }
        }
        return String(decoding: text, as: UTF8.self)
    }

    /// The nearest double to this decimal value (infinite when it is beyond the double range).
    var doubleValue: Double {
        guard !self.digits.isEmpty else { return self.isNegative ? -0.0 : 0.0 }
        let digitText = String(decoding: self.digits.map { $0 + UInt8(ascii: "0") }, as: UTF8.self)
        let magnitude = Double("0.\(digitText)e\(self.pointPosition)") ?? .infinity
        return self.isNegative ? -magnitude : magnitude
    }

    private func digitCharacter(at index: Int) -> UInt8 {
        let digit = index >= 0 && index < self.digits.count ? self.digits[index] : 0
        return digit + UInt8(ascii: "0")
    }
}
