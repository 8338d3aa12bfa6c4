// KafkaJS's admin client creates topics one by one (createTopics waits for their leaders by default), reads
// their metadata, lists the topics, deletes them and lists again; prints what it saw as one JSON
// line. Usage: node create_topics.js <bootstrap servers> <partitions> <replication factor> <topic>...
'use strict'
const { Kafka, logLevel } = require('kafkajs')

const [brokers, partitions, replicationFactor, ...topics] = process.argv.slice(2)
const toStderr = () => ({ namespace, label, log }) => {
  const { message, ...extra } = log
  console.error(`${label} [${namespace}] ${message} ${JSON.stringify(extra)}`)
}
const kafka = new Kafka({ clientId: 'raykafka-kafkajs-test', brokers: brokers.split(','),
                          logLevel: logLevel.WARN, logCreator: toStderr })

async function main () {
  const admin = kafka.admin()
  await admin.connect()
  try {
    // One createTopics call per topic, each awaited before the next.
    const created = []
    for (const topic of topics) {
      created.push(await admin.createTopics({
        topics: [{ topic, numPartitions: Number(partitions), replicationFactor: Number(replicationFactor) }],
      }))
    }
    const metadata = await admin.fetchTopicMetadata({ topics })
    const leaders = {}
    for (const topic of metadata.topics) {
      leaders[topic.name] = topic.partitions.map(p => [p.partitionId, p.leader])
    }
    const listedAfterCreate = await admin.listTopics()
    await admin.deleteTopics({ topics })
    const listedAfterDelete = await admin.listTopics()
    console.log(JSON.stringify({ created, leaders, listedAfterCreate, listedAfterDelete }))
  } finally {
    await admin.disconnect()
  }
}

main().catch(error => {
  console.error(`KafkaJS failed: ${error.name}: ${error.message} (type ${error.type})`)
  process.exit(1)
})
