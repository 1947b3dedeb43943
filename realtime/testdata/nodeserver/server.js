'use strict';
// Reference Socket.IO server (socket.io 4.8.4) for the realtime transport
// interop test. It listens on 127.0.0.1 on a free port, prints the port as
// the first line on stdout, and exits when stdin closes.
//
// Namespace /ws behaves like the cloud where it matters to the transport:
// the handshake's Authorization header is checked by a middleware (a bad
// token is refused with a CONNECT_ERROR that has no "data" member), events
// arrive under string names and under the numeric name 22. The client drives
// the rest by emitting "test:*" commands.
const http = require('http');
const { Server } = require('socket.io');

const TOKEN = process.env.TOKEN || 'good-token';

const httpServer = http.createServer();
const io = new Server(httpServer, {
  path: '/socket.io',
  serveClient: false,
  pingInterval: Number(process.env.PING_INTERVAL_MS || 25000),
  pingTimeout: Number(process.env.PING_TIMEOUT_MS || 20000),
});

const ws = io.of('/ws');

ws.use((socket, next) => {
  if (socket.handshake.headers.authorization !== 'Bearer ' + TOKEN) {
    next(new Error('not authorized'));
    return;
  }
  next();
});

ws.on('connection', (socket) => {
  const h = socket.handshake.headers;
  socket.emit('test:hello', {
    nsp: socket.id,
    engine: socket.conn.id,
    transport: socket.conn.transport.name,
    headers: {
      authorization: h.authorization || '',
      origin: h.origin || '',
      referer: h.referer || '',
      'accept-language': h['accept-language'] || '',
      'x-appversion': h['x-appversion'] || '',
    },
  });

  socket.onAny((event, ...args) => {
    switch (event) {
      case 'test:push':
        socket.emit('app:modules:parameters:change', { M1: { P4: { v1: { value: 21.5 }, s1: 3 } } });
        // The real cloud sends event 22 under a numeric name. socket.emit
        // keeps a number as is, so the packet carries [22, {...}].
        socket.emit(22, { devid: 'M1' });
        socket.emit('app:module:connection:status:changed', { M1: { connected_at: 1700000100, gateway: { address: '10.0.0.2', interface: 'wifi', version: 'V2.08' } } });
        socket.emit(61, { task: 'created' });
        socket.emit('test:pushed');
        break;
      case 'test:echo':
        socket.emit('test:echo', ...args);
        break;
      case 'test:disconnect':
        socket.disconnect(false);
        break;
      case 'test:close':
        socket.disconnect(true);
        break;
      case 'test:connect_error':
        // A CONNECT_ERROR on a joined namespace, as a broken proxy might send.
        socket.packet({ type: 4, data: { message: 'HTTP 503 upstream' } });
        break;
      case 'test:abort':
        // Drop the TCP connection: no WebSocket close frame, no Engine.IO close.
        socket.request.socket.resetAndDestroy();
        break;
      default:
        break;
    }
  });
});

httpServer.listen(0, '127.0.0.1', () => {
  process.stdout.write(httpServer.address().port + '\n');
});

process.stdin.on('end', () => process.exit(0));
process.stdin.resume();
