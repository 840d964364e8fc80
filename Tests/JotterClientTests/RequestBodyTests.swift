import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
import JotterClient

/// The request builders on their own: exact bytes.
@Suite("JotterClient: request bodies")
struct RequestBodyTests {
    @Test("form-urlencoded escapes every reserved and non-ASCII byte")
    func formEscaping() {
        #expect(FormURLEncodedBody.escape("a-z_A.Z~09") == "a-z_A.Z~09")
        #expect(FormURLEncodedBody.escape("Bob & Alice") == "Bob+%26+Alice")
        #expect(FormURLEncodedBody.escape("1+1=2%") == "1%2B1%3D2%25")
        #expect(FormURLEncodedBody.escape("a\nb\r\t") == "a%0Ab%0D%09")
        #expect(FormURLEncodedBody.escape("é😀") == "%C3%A9%F0%9F%98%80")
        #expect(FormURLEncodedBody.escape("/?#[]@!$'()*,;") == "%2F%3F%23%5B%5D%40%21%24%27%28%29%2A%2C%3B")
        var form: FormURLEncodedBody = ["name": "Bob Smith", "x": "a&b=c"]
        form.append("tag", "1")
        form.append("tag", "2")
        #expect(form.encoded == "name=Bob+Smith&x=a%26b%3Dc&tag=1&tag=2")
    }

    @Test("apply(to:) sets POST, Content-Type and the body, and keeps another method")
    func formApply() {
        var request = URLRequest(url: URL(string: "http://127.0.0.1/echo")!)
        FormURLEncodedBody([("k", "v w")]).apply(to: &request)
        #expect(request.httpMethod == "POST")
        #expect(request.value(forHTTPHeaderField: "Content-Type") == "application/x-www-form-urlencoded")
        #expect(request.httpBody == Data("k=v+w".utf8))
        request.httpMethod = "PUT"
        FormURLEncodedBody().apply(to: &request)
        #expect(request.httpMethod == "PUT")
        #expect(request.httpBody == Data())
    }
}
