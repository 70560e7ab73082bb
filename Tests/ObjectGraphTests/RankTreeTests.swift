@testable import ObjectGraph
import TestSupport
import Testing

/// The live queries' two position structures against plain arrays: RankTree (rank and select over bits) and
/// PositionIndex (an array's elements and where each is), through random inserts, removals and changes at sizes that
/// split and merge their nodes.
struct RankTreeTests {
    typealias Generator = SeededRandom

    @Test(arguments: [1, 2, 3])
    func rankTreeAgreesWithAnArrayOfBits(seed: UInt64) {
        var random = Generator(seed: seed)
        var model = (0..<5_000).map { _ in Bool.random(using: &random) }
        var tree = RankTree(count: model.count) { model[$0] }
        #expect(tree.bits == model && tree.checkInvariants())
        for step in 0..<30_000 {
            let growing = step < 20_000
            switch Int.random(in: 0..<10, using: &random) {
            case 0..<4 where growing || model.isEmpty:
                let position = Int.random(in: 0...model.count, using: &random)
                let bit = Bool.random(using: &random)
                tree.insert(bit, at: position)
                model.insert(bit, at: position)
            case 0..<7 where !model.isEmpty:
                let position = Int.random(in: 0..<model.count, using: &random)
                #expect(tree.remove(at: position) == model.remove(at: position))
            default:
                guard !model.isEmpty else { continue }
                let position = Int.random(in: 0..<model.count, using: &random)
                let bit = Bool.random(using: &random)
                #expect(tree.set(position, to: bit) == model[position])
                model[position] = bit
            }
            if step % 1_000 == 0 {
                #expect(tree.checkInvariants(), "seed \(seed) step \(step)")
                #expect(tree.count == model.count && tree.ones == model.filter { $0 }.count)
                for _ in 0..<50 {
                    let position = Int.random(in: 0...model.count, using: &random)
                    #expect(tree.rank(position) == model[..<position].filter { $0 }.count)
                }
                let ones = model.indices.filter { model[$0] }
                for k in stride(from: 0, to: ones.count, by: max(1, ones.count / 40)) { #expect(tree.select(k) == ones[k]) }
            }
        }
        #expect(tree.bits == model && tree.checkInvariants())
    }

    @Test(arguments: [4, 5])
    func positionIndexAgreesWithAnArray(seed: UInt64) {
        var random = Generator(seed: seed)
        var model = (0..<3_000).map { _ in Value.object(Int.random(in: 0..<2_000, using: &random)) }
        var index = PositionIndex(ValueList(model))
        for step in 0..<20_000 {
            let growing = step < 12_000
            let element = Value.object(Int.random(in: 0..<2_000, using: &random))
            switch Int.random(in: 0..<10, using: &random) {
            case 0..<4 where growing || model.isEmpty:
                let position = Int.random(in: 0...model.count, using: &random)
                index.insert(element, at: position)
                model.insert(element, at: position)
            case 0..<7 where !model.isEmpty:
                let position = Int.random(in: 0..<model.count, using: &random)
                #expect(index.remove(at: position) == model.remove(at: position))
            default:
                guard !model.isEmpty else { continue }
                let position = Int.random(in: 0..<model.count, using: &random)
                index.replace(at: position, with: element)
                model[position] = element
            }
            if step % 1_000 == 0 {
                #expect(index.checkInvariants(), "seed \(seed) step \(step)")
                #expect(index.elements == model)
                for _ in 0..<30 {
                    let probe = Value.object(Int.random(in: 0..<2_000, using: &random))
                    #expect(index.positions(of: probe) == model.indices.filter { model[$0] == probe })
                }
            }
        }
        #expect(index.elements == model && index.checkInvariants())
    }
}
