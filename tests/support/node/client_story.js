// KafkaJS, unchanged, as the conformance tests run it against Apache Kafka and raykafka alike:
// the admin client creates a topic and describes it, an idempotent acks=-1 producer sends keyed
// records, a consumer group reads them all and commits, the admin client reads the group's offsets,
// deletes the group and the topic. Prints what it saw, in terms that do not depend on which system
// served it, as one JSON line.
// Usage: node client_story.js <bootstrap servers> <topic> <group>
'use strict'
const { Kafka, logLevel } = require('kafkajs')

const [brokers, topic, groupId] = process.argv.slice(2)
const PARTITIONS = 3
const RECORDS = 90
const DEADLINE_MS = 90000
const toStderr = () => ({ namespace, label, log }) => {
  const { message, ...extra } = log
  console.error(`${label} [${namespace}] ${message} ${JSON.stringify(extra)}`)
}
const kafka = new Kafka({ clientId: 'raykafka-conformance', brokers: brokers.split(','),
                          logLevel: logLevel.WARN, logCreator: toStderr })

// Polls ``check`` until it returns true or the deadline passes; returns its last answer.
async function eventually (check) {
  const deadline = Date.now() + DEADLINE_MS
  let answer = await check()
  while (!answer && Date.now() < deadline) {
    await new Promise(resolve => setTimeout(resolve, 200))
    answer = await check()
  }
  return answer
}

async function main () {
  const seen = {}
  const admin = kafka.admin()
  await admin.connect()
  try {
    const cluster = await admin.describeCluster()
    const replicationFactor = Math.min(3, cluster.brokers.length)
    seen['topic created'] = await admin.createTopics({
      topics: [{ topic, numPartitions: PARTITIONS, replicationFactor }],
    })
    const metadata = await admin.fetchTopicMetadata({ topics: [topic] })
    const partitions = metadata.topics[0].partitions
    seen['partitions'] = partitions.length
    seen['replicas are the replication factor'] = partitions.every(p => p.replicas.length === replicationFactor)
    seen['topic listed'] = (await admin.listTopics()).includes(topic)

    const producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1 })
    await producer.connect()
    const messages = []
    for (let i = 0; i < RECORDS; i++) {
      messages.push({ key: `key-${i}`, value: `value-${i}`, partition: i % PARTITIONS })
    }
    const sent = await producer.send({ topic, acks: -1, messages })
    await producer.disconnect()
    seen['acknowledged partitions'] = sent.length
    seen['acknowledged base offsets'] = sent.map(r => [r.partition, r.baseOffset]).sort()

    const consumer = kafka.consumer({ groupId })
    await consumer.connect()
    await consumer.subscribe({ topic, fromBeginning: true })
    const values = new Set()
    let resolveDone
    const done = new Promise(resolve => { resolveDone = resolve })
    await consumer.run({
      eachMessage: async ({ message }) => {
        values.add(message.value.toString())
        if (values.size >= RECORDS) resolveDone()
      },
    })
    const timer = setTimeout(resolveDone, DEADLINE_MS)
    await done
    clearTimeout(timer)
    await consumer.disconnect() // commits what was read (autoCommit) and leaves the group
    seen['distinct values read by the group'] = values.size

    const offsets = await admin.fetchOffsets({ groupId, topics: [topic] })
    seen['committed offsets, summed'] = offsets[0].partitions.reduce((sum, p) => sum + Number(p.offset), 0)
    const described = await admin.describeGroups([groupId])
    seen['group state after the member left'] = described.groups[0].state
    await admin.deleteGroups([groupId])
    seen['group listed after delete'] = !(await eventually(
      async () => !(await admin.listGroups()).groups.some(g => g.groupId === groupId)))
    await admin.deleteTopics({ topics: [topic] })
    seen['topic listed after delete'] = !(await eventually(async () => !(await admin.listTopics()).includes(topic)))
  } finally {
    await admin.disconnect()
  }
  console.log(JSON.stringify(seen))
}

main().catch(error => {
  console.error(`KafkaJS failed: ${error.name}: ${error.message} (type ${error.type})`)
  process.exit(1)
})
