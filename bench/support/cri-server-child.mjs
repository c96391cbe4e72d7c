// The in-memory CRI server in a process of its own, so that its CPU and memory are not counted
// as the pipeline's. Sends its endpoint to the parent over IPC; answers 'counts' with the number
// of calls per method so far; exits on 'close'.
import { InMemoryCriServer } from '@kubelet-kit/cri/testing';

const server = await InMemoryCriServer.start({
  images: [process.env.KUBELET_KIT_BUSYBOX_IMAGE ?? 'localhost/kubelet-kit/busybox:1.0'],
});
const counts = {};
// The server logs every call: fold the log into counts so that it does not grow.
const fold = () => {
  for (const c of server.calls()) counts[c.method] = (counts[c.method] ?? 0) + 1;
  server.clearCalls();
};
const trim = setInterval(fold, 1000);
process.on('message', async (m) => {
  if (m === 'counts') {
    fold();
    process.send({ counts });
  } else if (m === 'close') {
    clearInterval(trim);
    await server.close();
    process.exit(0);
  }
});
process.send({ endpoint: server.endpoint });
