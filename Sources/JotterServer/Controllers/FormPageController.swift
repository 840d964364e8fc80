import JotterHTTP

/// `GET /form.html`: a plain form that posts fields and a file to `/echo` and to `/uploads`,
/// like the test form that came with the original upload recipe.
struct FormPageController {
    func register(in routes: inout RouterBuilder) {
        routes.get("/form.html", operation: WebOperations.form) { request, _ in
            Response(
                status: .ok,
                headers: HTTPHeaders([
                    ("Content-Type", "text/html; charset=utf-8"),
                    (
                        "Content-Security-Policy",
                        "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
                    ),
                    ("Cache-Control", "no-cache"),
                ]), body: Array(Self.page.utf8))
        }
    }

    static let page = """
        <!doctype html>
        <html lang="en">
        <head>
        <meta charset="utf-8">
        <meta name="viewport" content="width=device-width, initial-scale=1">
        <title>Jotter — test form</title>
        <style>
          body { font: 16px/1.5 system-ui, sans-serif; max-width: 40rem; margin: 2rem auto; padding: 0 1rem; color: #1d1d1f; }
          fieldset { border: 1px solid #d2d2d7; border-radius: 8px; margin: 0 0 1.5rem; padding: 1rem 1.25rem; }
          legend { font-weight: 600; padding: 0 .25rem; }
          label { display: block; margin: .75rem 0 .25rem; font-weight: 500; }
          input[type=text], input[type=email] { width: 100%; box-sizing: border-box; padding: .5rem; border: 1px solid #c7c7cc; border-radius: 6px; font: inherit; }
          button { margin-top: 1rem; padding: .5rem 1rem; border: 0; border-radius: 6px; background: #0a66d8; color: #fff; font: inherit; cursor: pointer; }
          p.hint { color: #6e6e73; font-size: .9rem; }
        </style>
        </head>
        <body>
        <h1>Test form</h1>
        <p class="hint">Posts to this server. <code>/echo</code> shows the request as JSON; <code>/uploads</code> stores the file.</p>

        <form action="/echo" method="post" enctype="multipart/form-data">
          <fieldset>
            <legend>Echo (multipart)</legend>
            <label for="echo-name">Name</label>
            <input id="echo-name" name="name" type="text" value="Bob">
            <label for="echo-email">Email</label>
            <input id="echo-email" name="email" type="email" value="bob@example.com">
            <label for="echo-comment">Comment</label>
            <input id="echo-comment" name="comment" type="text" value="Hello & welcome = 100% + more">
            <label for="echo-file">File</label>
            <input id="echo-file" name="file" type="file">
            <button type="submit">Send to /echo</button>
          </fieldset>
        </form>

        <form action="/echo" method="post">
          <fieldset>
            <legend>Echo (form-urlencoded)</legend>
            <label for="plain-name">Name</label>
            <input id="plain-name" name="name" type="text" value="Bob">
            <button type="submit">Send to /echo</button>
          </fieldset>
        </form>

        <form action="/uploads" method="post" enctype="multipart/form-data">
          <fieldset>
            <legend>Upload</legend>
            <label for="upload-file">Files</label>
            <input id="upload-file" name="file" type="file" multiple required>
            <label for="upload-note">Attach to note id (optional)</label>
            <input id="upload-note" name="note_id" type="text" inputmode="numeric">
            <button type="submit">Upload to /uploads</button>
          </fieldset>
        </form>
        </body>
        </html>

        """
}
