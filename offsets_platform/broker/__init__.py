"""Apache Kafka run by the project: the jars and `java` the install step provides (`jvm`), and the
embedded broker (`embedded`) that the demo, the tests and `offsets-platform broker` start."""
