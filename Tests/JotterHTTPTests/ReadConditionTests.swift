import JotterHTTP
import Testing

@Suite("Conditional reads: HTTP dates and RFC 9110's order of preconditions")
struct ReadConditionTests {
    @Test("the three date formats a recipient must accept, and nothing else")
    func dates() {
        let seconds: Int64 = 784_111_777  // Sun, 06 Nov 1994 08:49:37 GMT
        #expect(HTTPDate.format(seconds) == "Sun, 06 Nov 1994 08:49:37 GMT")
        #expect(HTTPDate.parse("Sun, 06 Nov 1994 08:49:37 GMT") == seconds)
        #expect(HTTPDate.parse("Sunday, 06-Nov-94 08:49:37 GMT") == seconds)
        #expect(HTTPDate.parse("Sun Nov  6 08:49:37 1994") == seconds)
        #expect(HTTPDate.parse(" Sun, 06 Nov 1994 08:49:37 GMT ") == seconds)
        for text in ["", "yesterday", "Sun, 06 Nov 1994 08:49:37", "Sun, 06 Nov 1994 08:49:37 GMT trailing", "1994-11-06T08:49:37Z"] {
            #expect(HTTPDate.parse(text) == nil, "\(text)")
        }
    }

    @Test("If-Match before If-Unmodified-Since, If-None-Match before If-Modified-Since")
    func order() {
        let etag = #""abc""#, modified: Int64 = 784_111_777
        let earlier = "Sat, 05 Nov 1994 08:49:37 GMT", same = "Sun, 06 Nov 1994 08:49:37 GMT"
        func condition(_ fields: [(String, String)]) -> ReadCondition {
            ReadCondition(HTTPHeaders(fields), etag: etag, lastModified: modified)
        }
        #expect(condition([]) == .proceed)
        #expect(condition([("If-Match", #""other""#)]) != .proceed)
        #expect(condition([("If-Match", #""other", "abc""#)]) == .proceed)
        #expect(condition([("If-Unmodified-Since", earlier)]) != .proceed)
        #expect(condition([("If-Match", etag), ("If-Unmodified-Since", earlier)]) == .proceed)
        #expect(condition([("If-None-Match", #"W/"abc""#)]) == .notModified)
        #expect(condition([("If-Modified-Since", same)]) == .notModified)
        #expect(condition([("If-Modified-Since", earlier)]) == .proceed)
        #expect(condition([("If-None-Match", #""other""#), ("If-Modified-Since", same)]) == .proceed)
        // A list in several field lines is one list; an empty line adds nothing; two dates, none.
        #expect(condition([("If-Match", #""other""#), ("If-Match", etag)]) == .proceed)
        #expect(condition([("If-Match", ""), ("If-Match", #""other""#)]) != .proceed)
        #expect(condition([("If-None-Match", #""other""#), ("If-None-Match", etag)]) == .notModified)
        #expect(condition([("If-Modified-Since", same), ("If-Modified-Since", same)]) == .proceed)
        // Without a Last-Modified, the dates are not looked at.
        #expect(ReadCondition(HTTPHeaders([("If-Modified-Since", same)]), etag: etag) == .proceed)
    }
}
