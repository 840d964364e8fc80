# The echo server of the iOS Recipes form-POST and upload chapter (BasicHTTPPost and
# MultipartHTTPPost), on Ruby's WEBrick: POST /post answers an HTML page that shows the
# parsed form (Ruby's Hash#inspect of the query); POST /upload stores the `filedata` file
# part under the client's filename in the current folder and names it in an HTML page. Both
# are WEBrick proc handlers (they answer GET and POST alike); the document root is this
# folder, where the chapter keeps form.html.
#
# Rebuilt from the chapter's description for bench/originals.py; the one change is that the
# port comes from the command line (the book's server listens on 3000), so the harness can
# pick a free one: ruby webserver.rb PORT
require 'webrick'

server = WEBrick::HTTPServer.new(Port: Integer(ARGV.fetch(0, '3000')),
                                 BindAddress: '127.0.0.1',
                                 DocumentRoot: File.dirname(__FILE__))

server.mount_proc('/post') do |request, response|
  response['Content-Type'] = 'text/html'
  response.body = %{
    <html><body>
    <h1>Thank you for POSTing!</h1>
    <p>
      You posted: #{request.query.inspect}
    </p>
    </body></html>
  }
end

server.mount_proc('/upload') do |request, response|
  upload = request.query['filedata']
  File.open(upload.filename, 'wb') do |file|
    upload.each_data { |chunk| file << chunk }
  end
  response['Content-Type'] = 'text/html'
  response.body = %{
    <html><body>
    <h1>Thanks for the upload!</h1>
    <p>
      Your file was saved to #{upload.filename}!
    </p>
    </body></html>
  }
end

trap('INT') { server.shutdown }
server.start
