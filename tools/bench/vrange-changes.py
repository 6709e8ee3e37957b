#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""VRANGE after changes: loads N two-dimensional elements into key `vr`
(M 4 EF 8, so the graph costs little), then times K pairs of (VADD new
element, VRANGE [e00005 + 10), K pairs of (VREM, VRANGE) and K pairs of
(VCARD, VRANGE), one pair in flight. Usage: vrange-changes.py PORT N K.
A server that re-sorts its elements after every change pays n log n per
pair in the first two columns."""
import socket
import sys
import time

port=int(sys.argv[1]); n=int(sys.argv[2]); k=int(sys.argv[3])
s=socket.create_connection(('127.0.0.1',port)); f=s.makefile('rb')
def enc(*a):
    o=b'*%d\r\n'%len(a)
    for x in a:
        x=str(x).encode(); o+=b'$%d\r\n%s\r\n'%(len(x),x)
    return o
def rd():
    l=f.readline()
    if l[:1]==b'*':
        for _ in range(int(l[1:])): rd()
    elif l[:1]==b'$':
        if int(l[1:])>=0: f.read(int(l[1:])+2)
    return l
s.sendall(enc('DEL','vr')); rd()
B=1000
for i in range(0,n,B):
    s.sendall(b''.join(enc('VADD','vr','VALUES',2,(j%97)+1,(j%89)+1,'e%08d'%((j*7919)%n),'NOQUANT','M','4','EF','8') for j in range(i,min(n,i+B))))
    for j in range(i,min(n,i+B)): rd()
t=time.time()
for i in range(k):
    s.sendall(enc('VADD','vr','VALUES',2,1+i%5,2,'x%06d'%i,'NOQUANT','M','4','EF','8')+enc('VRANGE','vr','[e00005','+','10')); rd(); rd()
t1=time.time()-t
t=time.time()
for i in range(k):
    s.sendall(enc('VREM','vr','x%06d'%i)+enc('VRANGE','vr','[e00005','+','10')); rd(); rd()
t2=time.time()-t
t=time.time()
for i in range(k):
    s.sendall(enc('VCARD','vr')+enc('VRANGE','vr','[e00005','+','10')); rd(); rd()
t3=time.time()-t
print('n=%d add+vrange %.1f us/pair, rem+vrange %.1f us/pair, vcard+vrange %.1f us/pair'%(n,t1/k*1e6,t2/k*1e6,t3/k*1e6))
