// Runs aws-cdk-lib's own EKS cluster-resource handler (the bundled
// custom-resource-handlers/dist/aws-eks/cluster-resource-handler/index.js of the installed aws-cdk-lib) against
// a fake EKS, for the __init__.py beside it. Hermetic: the handler's two external modules -- the AWS SDK v3
// packages the Lambda runtime provides (@aws-sdk/client-eks, @aws-sdk/credential-providers), which the bundle
// does not contain -- are replaced in-process by fakes that record every call and answer from a small cluster
// state given with each request. Nothing opens a socket: http/https/net/tls connections throw.
//
// Usage: node harness.js <path to the extracted index.js>
// Protocol: one JSON object per line on stdin, one answer per line on stdout (in order):
//   request  {"fn": "onEvent"|"isComplete", "event": {...CloudFormation custom-resource event...},
//             "state": {"cluster": {name, status, version, arn, accessConfig, ...} | null,
//                       "update": {status, errors} | null,
//                       "fargateProfiles": {name: {status, ...}}}}
//   answer   {"calls": [[operation, params], ...], "result": ..., "error": "message" | null,
//             "analysis": {...the handler's own update analysis...} | null, "assumeRole": {...} | null}
"use strict";

const Module = require("module");
const readline = require("readline");

// No network, whatever the handler's bundled HTTP stack would do.
for (const name of ["HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy", "NO_PROXY", "no_proxy"]) {
  delete process.env[name];
}
for (const mod of ["http", "https", "net", "tls", "http2"]) {
  const m = require(mod);
  for (const fn of ["request", "get", "connect", "createConnection"]) {
    if (typeof m[fn] === "function") {
      m[fn] = () => {
        throw new Error(`harness: ${mod}.${fn} called: the handler must not reach the network`);
      };
    }
  }
}

let calls = [];
let state = {};
let assumed = null;
let logs = [];

function awsError(name, message) {
  const err = new Error(message);
  err.name = name;
  err.$fault = "client";
  return err;
}

// Params as the SDK would serialize them: undefined members are left out (JSON round trip).
function record(operation, params) {
  calls.push([operation, params === undefined ? {} : JSON.parse(JSON.stringify(params))]);
}

function cluster(name) {
  const c = state.cluster;
  if (!c || (c.name !== undefined && c.name !== name)) {
    throw awsError("ResourceNotFoundException", `No cluster found for name: ${name}.`);
  }
  return { name, status: "ACTIVE", arn: `arn:aws:eks:us-east-1:111111111111:cluster/${name}`, ...c };
}

let updateCount = 0;
function newUpdate(type) {
  updateCount += 1;
  return { update: { id: `update-${updateCount}`, status: "InProgress", type } };
}

class EKS {
  constructor(options) {
    this.options = options;
  }
  async createCluster(p) {
    record("CreateCluster", p);
    return { cluster: { name: p.name, status: "CREATING", arn: `arn:aws:eks:us-east-1:111111111111:cluster/${p.name}` } };
  }
  async deleteCluster(p) {
    record("DeleteCluster", p);
    return { cluster: cluster(p.name) };
  }
  async describeCluster(p) {
    record("DescribeCluster", p);
    return { cluster: cluster(p.name) };
  }
  async describeUpdate(p) {
    record("DescribeUpdate", p);
    return { update: state.update === null ? undefined : { id: p.updateId, status: "Successful", ...(state.update || {}) } };
  }
  async updateClusterConfig(p) {
    record("UpdateClusterConfig", p);
    cluster(p.name);
    return newUpdate("ConfigUpdate");
  }
  async updateClusterVersion(p) {
    record("UpdateClusterVersion", p);
    cluster(p.name);
    return newUpdate("VersionUpdate");
  }
  async tagResource(p) {
    record("TagResource", p);
    return {};
  }
  async untagResource(p) {
    record("UntagResource", p);
    return {};
  }
  async createFargateProfile(p) {
    record("CreateFargateProfile", p);
    return {
      fargateProfile: {
        fargateProfileName: p.fargateProfileName,
        fargateProfileArn: `arn:aws:eks:us-east-1:111111111111:fargateprofile/${p.clusterName}/${p.fargateProfileName}/0`,
        status: "CREATING",
      },
    };
  }
  async deleteFargateProfile(p) {
    record("DeleteFargateProfile", p);
    return {};
  }
  async describeFargateProfile(p) {
    record("DescribeFargateProfile", p);
    const profile = (state.fargateProfiles || {})[p.fargateProfileName];
    if (!profile) {
      throw awsError("ResourceNotFoundException", `No Fargate Profile found with name: ${p.fargateProfileName}.`);
    }
    return { fargateProfile: { fargateProfileName: p.fargateProfileName, status: "ACTIVE", ...profile } };
  }
}

const fakes = {
  "@aws-sdk/client-eks": { EKS },
  "@aws-sdk/credential-providers": {
    fromTemporaryCredentials: (options) => {
      assumed = options && options.params ? JSON.parse(JSON.stringify(options.params)) : null;
      return async () => ({ accessKeyId: "AKIDFAKE", secretAccessKey: "fake", sessionToken: "fake" });
    },
  },
};
const load = Module._load;
Module._load = function (request, parent, isMain) {
  if (Object.prototype.hasOwnProperty.call(fakes, request)) {
    return fakes[request];
  }
  return load.call(this, request, parent, isMain);
};

// The handler logs with console.log (its update analysis among it): kept per request, off stdout.
const out = process.stdout;
for (const level of ["log", "info", "warn", "error", "debug"]) {
  console[level] = (...args) => {
    logs.push(args);
  };
}

const handler = require(process.argv[2]);

function analysisOf(entries) {
  for (const args of entries) {
    if (args[0] === "onUpdate:" && typeof args[1] === "string") {
      return JSON.parse(args[1]).updates;
    }
  }
  return null;
}

async function answer(request) {
  calls = [];
  logs = [];
  assumed = null;
  state = request.state || {};
  updateCount = 0;
  let result = null;
  let error = null;
  try {
    const value = await handler[request.fn](request.event);
    result = value === undefined ? null : value;
  } catch (err) {
    error = err && err.message !== undefined ? String(err.message) : String(err);
  }
  return { calls, result, error, analysis: analysisOf(logs), assumeRole: assumed };
}

const lines = readline.createInterface({ input: process.stdin, terminal: false });
let queue = Promise.resolve();
lines.on("line", (line) => {
  if (!line.trim()) {
    return;
  }
  queue = queue.then(async () => {
    let reply;
    try {
      reply = await answer(JSON.parse(line));
    } catch (err) {
      reply = { calls: [], result: null, error: `harness: ${err && err.message}`, analysis: null, assumeRole: null };
    }
    out.write(JSON.stringify(reply) + "\n");
  });
});
lines.on("close", () => {
  queue.then(() => process.exit(0));
});
