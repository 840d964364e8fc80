import Testing
import JotterAPI

@Suite("Timestamp")
struct TimestampTests {
    @Test(
        "format and parse agree with known dates",
        arguments: [
            (Int64(0), "1970-01-01 00:00:00"), (1_796_049_340, "2026-11-30 14:35:40"), (951_782_400, "2000-02-29 00:00:00"),
            (-1, "1969-12-31 23:59:59"), (253_402_300_799, "9999-12-31 23:59:59"), (4_107_542_400, "2100-03-01 00:00:00"),
        ])
    func known(_ seconds: Int64, _ text: String) {
        #expect(Timestamp.format(seconds) == text)
        #expect(Timestamp.parse(text) == seconds)
    }

    @Test func roundTripsEveryHourForAYearAndAcrossCenturies() {
        for seconds in stride(from: Int64(1_700_000_000), to: 1_731_536_000, by: 3_599) {
            #expect(Timestamp.parse(Timestamp.format(seconds)) == seconds)
        }
        for seconds in stride(from: Int64(-2_208_988_800), to: 4_102_444_800, by: 86_400 * 97 + 13) {
            #expect(Timestamp.parse(Timestamp.format(seconds)) == seconds)
        }
    }

    @Test("the original client's H:mm:ss parses; garbage does not", arguments: ["2026-11-30 9:05:01"])
    func singleDigitHour(_ text: String) {
        #expect(Timestamp.parse(text) != nil)
        #expect(Timestamp.parse("2026-13-01 00:00:00") == nil)
        #expect(Timestamp.parse("yesterday") == nil)
    }
}
