// UTF-8 validation, alone and inside text messages: a table of valid and invalid sequences (multi-byte forms,
// overlongs, surrogates, beyond U+10FFFF, truncations), every split of each, sequences split across fragments, and
// a randomized comparison with the standard library's validation.

import Testing
@testable import WebSocket

struct UTF8ValidatorTests {
    static let validInputs: [[UInt8]] = [
        [], bytes("a"), bytes("plain ASCII longer than eight bytes"),
        [0xC2, 0x80], [0xDF, 0xBF],  // U+0080, U+07FF
        // U+0800, U+D7FF, U+E000, U+FFFF
        [0xE0, 0xA0, 0x80], [0xED, 0x9F, 0xBF], [0xEE, 0x80, 0x80], [0xEF, 0xBF, 0xBF],
        [0xF0, 0x90, 0x80, 0x80], [0xF4, 0x8F, 0xBF, 0xBF],  // U+10000, U+10FFFF
        bytes("κόσμε"), bytes("€𝄞 and more ASCII after it"), bytes("12345678é12345678€"),
    ]

    static let invalidInputs: [[UInt8]] = [
        [0x80], [0xBF], [0x61, 0x80],  // stray continuation bytes
        [0xC0, 0x80], [0xC1, 0xBF],  // overlong 2-byte forms
        [0xE0, 0x80, 0x80], [0xE0, 0x9F, 0xBF],  // overlong 3-byte forms
        [0xF0, 0x80, 0x80, 0x80], [0xF0, 0x8F, 0xBF, 0xBF],  // overlong 4-byte forms
        [0xED, 0xA0, 0x80], [0xED, 0xBF, 0xBF], [0xED, 0xA0, 0x80, 0xED, 0xB0, 0x80],  // surrogates, a surrogate pair
        [0xF4, 0x90, 0x80, 0x80], [0xF5, 0x80, 0x80, 0x80], [0xF7, 0xBF, 0xBF, 0xBF],  // beyond U+10FFFF
        [0xFE], [0xFF], [0xF8, 0x88, 0x80, 0x80, 0x80],  // never in UTF-8
        [0xC2], [0xE2, 0x82], [0xF0, 0x9D, 0x84], [0x61, 0x62, 0xF4],  // truncated at the end
        [0xC2, 0x41], [0xE2, 0x28, 0xA1], [0xF0, 0x9D, 0x84, 0x20],  // a sequence broken by another byte
        bytes("abcdefgh") + [0x80], bytes("abcdefghijklmnop") + [0xC2],  // after the eight-byte ASCII steps
    ]

    /// The validator's verdict on `input` fed in `pieces`.
    static func verdict(_ pieces: [ArraySlice<UInt8>]) -> Bool {
        var validator = UTF8Validator()
        for piece in pieces {
            guard piece.withUnsafeBytes({ validator.validate($0) }) else { return false }
        }
        return validator.isComplete
    }

    @Test("valid sequences pass, cut anywhere", arguments: UTF8ValidatorTests.validInputs)
    func valid(_ input: [UInt8]) {
        for cut in 0...input.count {
            #expect(Self.verdict([input[..<cut], input[cut...]]), "cut at \(cut)")
        }
        #expect(Self.verdict(input.indices.map { input[$0...$0] }))
    }

    @Test("invalid sequences fail, cut anywhere", arguments: UTF8ValidatorTests.invalidInputs)
    func invalid(_ input: [UInt8]) {
        for cut in 0...input.count {
            #expect(!Self.verdict([input[..<cut], input[cut...]]), "cut at \(cut)")
        }
        #expect(!Self.verdict(input.indices.map { input[$0...$0] }))
    }

    @Test("in a text message split into two fragments at every byte: valid is delivered, invalid is 1007",
        arguments: UTF8ValidatorTests.validInputs + UTF8ValidatorTests.invalidInputs)
    func acrossFragments(_ input: [UInt8]) {
        let isValid = String(validating: input, as: UTF8.self) != nil
        for cut in 0...input.count {
            let frames = clientFrame(.text, Array(input[..<cut]), isFinal: false)
                + clientFrame(.continuation, Array(input[cut...]))
            let decoded = decode(frames)
            if isValid {
                #expect(decoded == Decoded(events: [.text(String(decoding: input, as: UTF8.self))]), "cut at \(cut)")
            } else {
                #expect(decoded.events == [] && decoded.error?.code == .invalidPayload, "cut at \(cut)")
            }
        }
    }

    @Test("agrees with the standard library on random byte strings")
    func agreesWithStandardLibrary() {
        var generator = SystemRandomNumberGenerator()
        // Bytes drawn mostly from the interesting lead and continuation ranges.
        let palette: [UInt8] = [0x00, 0x41, 0x7F, 0x80, 0x8F, 0x90, 0x9F, 0xA0, 0xBF, 0xC0, 0xC1, 0xC2, 0xDF, 0xE0,
            0xE1, 0xEC, 0xED, 0xEE, 0xEF, 0xF0, 0xF1, 0xF3, 0xF4, 0xF5, 0xFF]
        for _ in 0..<20_000 {
            let count = Int.random(in: 0...12, using: &generator)
            let input = (0..<count).map { _ in palette.randomElement(using: &generator)! }
            let expected = String(validating: input, as: UTF8.self) != nil
            let cut = Int.random(in: 0...count, using: &generator)
            #expect(Self.verdict([input[..<cut], input[cut...]]) == expected, "\(input), cut at \(cut)")
        }
    }
}
