import socket,struct,sys,time
def udp(port,payload,seq=0,count=1,rid=7,wait=0.5):
    s=socket.socket(socket.AF_INET,socket.SOCK_DGRAM); s.settimeout(wait)
    s.sendto(struct.pack(">HHHH",rid,seq,count,0)+payload,("127.0.0.1",port))
    out=[]; 
    try:
        while True:
            d,_=s.recvfrom(65536); out.append(d)
    except socket.timeout: pass
    return out
port=int(sys.argv[1])
tc=socket.create_connection(('127.0.0.1',port))
tc.sendall(b''.join(b'set uk%d 0 0 100\r\n%s\r\n'%(i,b'x'*100) for i in range(300))); time.sleep(0.3); tc.recv(1<<20)
for name,p,kw in [('seq1',b'get uk1\r\n',dict(seq=1)),('count2',b'get uk1\r\n',dict(count=2)),('seq1count2',b'get uk1\r\n',dict(seq=1,count=2)),
  ('metadump',b'lru_crawler metadump all\r\n',{}),('mgdump',b'lru_crawler mgdump all\r\n',{}),('stats',b'stats\r\n',{}),('stats settings',b'stats settings\r\n',{}),('stats items',b'stats items\r\n',{}),('stats slabs',b'stats slabs\r\n',{}),('stats conns',b'stats conns\r\n',{}),
  ('get 50 keys',b'get '+b' '.join(b'uk%d'%i for i in range(50))+b'\r\n',{}),('get same key x100',b'get'+b' uk1'*100+b'\r\n',{}),('version',b'version\r\n',{}),('watch',b'watch\r\n',{}),('stats detail dump',b'stats detail dump\r\n',{}),('stats cachedump 1 0',b'stats cachedump 1 0\r\n',{})]:
    out=udp(port,p,**kw)
    tot=sum(len(d) for d in out)
    hdr=[struct.unpack(">HHHH",d[:8]) for d in out[:3]]
    print('%-18s in=%4d out=%7d bytes %4d dgrams hdr=%s first=%r'%(name,len(p)+8,tot,len(out),hdr,out[0][8:50] if out else None))
