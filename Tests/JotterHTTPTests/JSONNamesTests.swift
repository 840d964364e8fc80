import Testing

@testable import JotterHTTP

@Suite("Repeated names in JSON bodies")
struct JSONNamesTests {
    @Test(arguments: [
        (#"{"a":1,"a":2}"#, "a"),
        (#"{"a":1,"\u0061":2}"#, "a"),
        (#"{"x":{"b":[1,{"c":1,"c":2}]}}"#, "c"),
        (#"{"é":1,"\u00e9":2}"#, "é"),
        (#"{"😀":1,"\ud83d\ude00":2}"#, "😀"),
        (#"{"q\"":1, "q\u0022" : 2}"#, "q\""),
        (#"{"t\t":1,"t\u0009":2}"#, "t\t"),
    ])
    func aRepeatedNameIsFound(_ json: String, _ name: String) {
        #expect(JSONNames.firstRepeated(in: Array(json.utf8)) == name)
    }

    @Test(arguments: [
        #"{"a":1,"b":"a","c":["a","a"],"d":{"a":2}}"#,
        #"{"a":"x\"y","\"a":1,"a\\":2}"#,
        #"[{"a":1},{"a":2}]"#,
        #"{"A":1,"a":2}"#,
        #"{}"#, #"{"a":{}, "b":[]}"#, #""a""#, #"{"a\/b":1,"a/c":2}"#,
    ])
    func uniqueNamesPass(_ json: String) {
        #expect(JSONNames.firstRepeated(in: Array(json.utf8)) == nil)
    }
}
