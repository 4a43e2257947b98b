# SPDX-License-Identifier: BSD-3-Clause
# Dalli (Ruby, binary protocol) over TLS: prints "ok"/"not ok" lines and
# exits non-zero on any failure. The server's certificate is verified against
# CA_FILE; with CERT and KEY the client presents one (mutual TLS).
# Usage: ruby dalli_tls.rb HOST:PORT CA_FILE [CERT KEY]
require 'dalli'
require 'openssl'
require 'logger'

addr, ca, cert, key = ARGV
abort "usage: #{$0} host:port ca.pem [cert key]" unless addr && ca
Dalli.logger = Logger.new($stderr, level: Logger::WARN)

ctx = OpenSSL::SSL::SSLContext.new
ctx.verify_mode = OpenSSL::SSL::VERIFY_PEER
ctx.ca_file = ca
if cert
  ctx.cert = OpenSSL::X509::Certificate.new(File.read(cert))
  ctx.key = OpenSSL::PKey.read(File.read(key))
end

$n = 0
$bad = 0
def ok(cond, what)
  $n += 1
  puts "#{cond ? 'ok' : 'not ok'} #{$n} - #{what}"
  $bad += 1 unless cond
end

# Dalli gives up on a server (and answers nil) after a socket error: no
# retries, so a failure shows instead of being hidden.
dc = Dalli::Client.new(addr, ssl_context: ctx, serializer: nil, compress: false,
                       value_max_bytes: 2 * 1024 * 1024, socket_max_failures: 1,
                       socket_timeout: 5, down_retry_delay: 60)
ok(dc.set('dk1', 'hello', 0, raw: true), 'set')
ok(dc.get('dk1') == 'hello', 'get')
big = Random.new(7).bytes(700_000)
ok(dc.set('dk2', big, 0, raw: true), 'set 700000 B (several records)')
ok(dc.get('dk2') == big, 'get 700000 B back intact')
ok(dc.add('dk1', 'x', 0, raw: true) == false, 'add of an existing key fails')
ok(dc.replace('dk1', 'hi', 0, raw: true), 'replace')
ok(dc.append('dk1', '!'), 'append')
ok(dc.get('dk1') == 'hi!', 'append result')
keys = (1..200).map { |i| "dm#{i}" }
# Dalli 3.0.6's get_multi fails on its own SSL sockets (NoMethodError
# `server' in servers_with_data, a client bug), so the pipeline here is
# multi: 200 quiet sets (setq) and the noop that ends them.
dc.multi { keys.each { |k| dc.set(k, "v-#{k}", 0, raw: true) } }
ok(keys.all? { |k| dc.get(k) == "v-#{k}" }, '200 quiet sets in one pipeline, then read back')
ok(dc.incr('dc', 5, 0, 10) == 10, 'incr creates with initial')
ok(dc.incr('dc', 5) == 15, 'incr')
ok(dc.decr('dc', 20) == 0, 'decr floors at 0')
v, cas = dc.get_cas('dk1')
ok(v == 'hi!' && cas.to_i > 0, 'get_cas')
ok(dc.set_cas('dk1', 'new', cas, 0, raw: true), 'set_cas with the right cas')
ok(!dc.set_cas('dk1', 'newer', cas, 0, raw: true), 'set_cas with a stale cas fails')
ok(dc.delete('dk1'), 'delete')
ok(dc.get('dk1').nil?, 'deleted is gone')
ok(dc.touch('dk2', 100), 'touch')
st = dc.stats.values.first
ok(st && st['ssl_handshake_errors'] == '0', 'stats over TLS (binary STAT)')
ok(dc.version.values.first.to_s.start_with?('1.'), 'version')
dc.close
puts "1..#{$n}"
exit($bad.zero? ? 0 : 1)
