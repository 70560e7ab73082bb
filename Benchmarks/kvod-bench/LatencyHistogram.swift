// A log-linear latency histogram in the spirit of HdrHistogram: exact below 256 ns, then 128 linear sub-buckets per
// power of two (relative error under 0.8 %), covering every UInt64. Recording is one bit scan and one increment.

/// Counts of latencies in nanoseconds, with percentiles read back at about 0.8 % precision.
struct LatencyHistogram {
    /// log2 of the sub-buckets per power of two.
    private static let subBucketBits = 7
    private static let subBucketCount = 1 << subBucketBits
    /// Values below this are counted exactly, one bucket each.
    private static let exactLimit = 2 << subBucketBits

    private var counts: [UInt64]
    /// How many values were recorded.
    private(set) var count: UInt64 = 0
    /// The largest value recorded (0 when empty).
    private(set) var maximum: UInt64 = 0
    /// The sum of all values, for the mean.
    private var sum: Double = 0

    /// An empty histogram.
    init() {
        self.counts = Array(repeating: 0, count: Self.bucketIndex(of: UInt64.max) + 1)
    }

    /// The bucket of `value`: the value itself below 256, otherwise its top 8 bits within its power of two.
    @inline(__always)
    static func bucketIndex(of value: UInt64) -> Int {
        let bits = UInt64.bitWidth - value.leadingZeroBitCount
        if bits <= Self.subBucketBits + 1 { return Int(value) }
        let shift = bits - (Self.subBucketBits + 1)
        let top = Int(truncatingIfNeeded: value >> UInt64(shift))  // in 128...255
        return Self.exactLimit + (shift - 1) * Self.subBucketCount + (top - Self.subBucketCount)
    }

    /// The smallest value that falls into bucket `index`.
    static func lowestValue(ofBucket index: Int) -> UInt64 {
        if index < Self.exactLimit { return UInt64(index) }
        let shift = (index - Self.exactLimit) / Self.subBucketCount + 1
        let top = UInt64((index - Self.exactLimit) % Self.subBucketCount + Self.subBucketCount)
        return top << UInt64(shift)
    }

    /// The largest value that falls into bucket `index`.
    static func highestValue(ofBucket index: Int) -> UInt64 {
        if index < Self.exactLimit { return UInt64(index) }
        let shift = (index - Self.exactLimit) / Self.subBucketCount + 1
        return Self.lowestValue(ofBucket: index) + ((1 << UInt64(shift)) - 1)
    }

    /// Counts one latency of `nanoseconds`.
    @inline(__always)
    mutating func record(_ nanoseconds: UInt64) {
        self.counts[Self.bucketIndex(of: nanoseconds)] &+= 1
        self.count &+= 1
        self.sum += Double(nanoseconds)
        if nanoseconds > self.maximum { self.maximum = nanoseconds }
    }

    /// Counts each of `values`.
    mutating func record(contentsOf values: UnsafeBufferPointer<UInt64>) {
        for value in values { self.record(value) }
    }

    /// Adds every value of `other`.
    mutating func merge(_ other: LatencyHistogram) {
        for index in other.counts.indices where other.counts[index] != 0 {
            self.counts[index] &+= other.counts[index]
        }
        self.count &+= other.count
        self.sum += other.sum
        self.maximum = max(self.maximum, other.maximum)
    }

    /// The value at `quantile` (0...1): the highest value equivalent to the bucket holding the rank, capped at the
    /// maximum recorded, as HdrHistogram reports percentiles. 0 when empty.
    func value(atQuantile quantile: Double) -> UInt64 {
        guard self.count > 0 else { return 0 }
        let rank = max(UInt64((quantile * Double(self.count)).rounded(.up)), 1)
        var seen: UInt64 = 0
        for index in self.counts.indices {
            seen &+= self.counts[index]
            if seen >= rank { return min(Self.highestValue(ofBucket: index), self.maximum) }
        }
        return self.maximum
    }

    /// The arithmetic mean in nanoseconds; 0 when empty.
    var mean: Double { self.count == 0 ? 0 : self.sum / Double(self.count) }

    /// The summary the reports print: p50, p99, p99.9, max and mean.
    var summary: LatencySummary {
        LatencySummary(
            count: self.count, p50: self.value(atQuantile: 0.50), p99: self.value(atQuantile: 0.99),
            p999: self.value(atQuantile: 0.999), maximum: self.maximum, mean: self.mean)
    }
}

/// Percentiles of one histogram, in nanoseconds.
struct LatencySummary {
    /// Values recorded.
    var count: UInt64
    /// Percentiles 50, 99 and 99.9, and the maximum.
    var p50: UInt64
    var p99: UInt64
    var p999: UInt64
    var maximum: UInt64
    /// The arithmetic mean.
    var mean: Double
}
