// A hostile or broken DDS peer, for rclev-dds's tests (`tests/hostile.rs` compiles and runs it
// against the same Fast DDS rclev-dds links): a raw Fast DDS participant that does what no ROS 2
// node does, to check that an rclev process beside it keeps working, bounded in memory.
//
//   hostile_peer names SECS               endpoints with invalid-UTF-8 topic and type names,
//                                         garbage participant and endpoint USER_DATA
//   hostile_peer discovery-info SECS      malformed ros_discovery_info samples, as fast as it can
//   hostile_peer flood TOPIC TYPE BYTES SECS [PAUSE_US]
//                                         a reliable KEEP_ALL writer of BYTES-byte samples (each
//                                         a valid std_msgs/ByteMultiArray) on the DDS topic TOPIC
//                                         (type TYPE), as fast as it can (or PAUSE_US between
//                                         writes); a write that blocks (flow control) waits at
//                                         most 200 ms, then it goes on; after SECS it stops
//                                         writing but keeps its writer (which still repairs
//                                         what a reader missed) until its stdin ends
//
// Every mode prints "ready" once its entities exist and "done <writes>" at the end; it exits 0
// after SECS seconds (flood: once its stdin ends, too). Nothing here is rclev's code: it is the
// shape of a peer, written with Fast DDS's public API only.

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include <fastdds/dds/domain/DomainParticipant.hpp>
#include <fastdds/dds/domain/DomainParticipantFactory.hpp>
#include <fastdds/dds/publisher/DataWriter.hpp>
#include <fastdds/dds/publisher/Publisher.hpp>
#include <fastdds/dds/subscriber/DataReader.hpp>
#include <fastdds/dds/subscriber/Subscriber.hpp>
#include <fastdds/dds/topic/Topic.hpp>
#include <fastdds/dds/topic/TopicDataType.hpp>
#include <fastdds/dds/topic/TypeSupport.hpp>
#include <fastdds/rtps/transport/UDPv4TransportDescriptor.h>
#include <fastdds/rtps/transport/shared_mem/SharedMemTransportDescriptor.h>
#include <fastrtps/utils/IPLocator.h>

namespace hostile {

namespace dds = eprosima::fastdds::dds;
namespace rtps = eprosima::fastrtps::rtps;

struct Bytes {
    std::vector<uint8_t> data;
};

// Sends and receives bytes as they are (the caller writes the encapsulation header).
class RawType : public dds::TopicDataType {
public:
    explicit RawType(const std::string& name) {
        setName(name.c_str());
        m_typeSize = 64;
        m_isGetKeyDefined = false;
        auto_fill_type_object(false);
        auto_fill_type_information(false);
    }
    bool serialize(void* data, rtps::SerializedPayload_t* payload) override {
        auto* b = static_cast<Bytes*>(data);
        payload->reserve(static_cast<uint32_t>(b->data.size()));
        std::memcpy(payload->data, b->data.data(), b->data.size());
        payload->length = static_cast<uint32_t>(b->data.size());
        payload->encapsulation = CDR_LE;
        return true;
    }
    bool serialize(void* data, rtps::SerializedPayload_t* payload,
                   dds::DataRepresentationId_t) override {
        return serialize(data, payload);
    }
    bool deserialize(rtps::SerializedPayload_t* payload, void* data) override {
        static_cast<Bytes*>(data)->data.assign(payload->data, payload->data + payload->length);
        return true;
    }
    std::function<uint32_t()> getSerializedSizeProvider(void* data) override {
        auto n = static_cast<uint32_t>(static_cast<Bytes*>(data)->data.size());
        return [n]() { return n; };
    }
    std::function<uint32_t()> getSerializedSizeProvider(void* data,
                                                        dds::DataRepresentationId_t) override {
        return getSerializedSizeProvider(data);
    }
    void* createData() override { return new Bytes(); }
    void deleteData(void* data) override { delete static_cast<Bytes*>(data); }
    bool getKey(void*, rtps::InstanceHandle_t*, bool) override { return false; }
};

// A participant that finds rclev the way rclev's tests set discovery up
// (ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST: no multicast, announcements to 127.0.0.1; shared
// memory and UDP, as rmw_fastrtps).
dds::DomainParticipant* participant(const std::vector<uint8_t>& user_data) {
    const char* env = std::getenv("ROS_DOMAIN_ID");
    uint32_t domain = env != nullptr ? static_cast<uint32_t>(std::atoi(env)) : 0;
    auto* factory = dds::DomainParticipantFactory::get_instance();
    dds::DomainParticipantQos qos = factory->get_default_participant_qos();
    auto& builtin = qos.wire_protocol().builtin;
    builtin.metatrafficMulticastLocatorList.clear();
    builtin.metatrafficUnicastLocatorList.push_back(rtps::Locator_t());
    auto udp = std::make_shared<eprosima::fastdds::rtps::UDPv4TransportDescriptor>();
    udp->maxInitialPeersRange = 32;
    qos.transport().use_builtin_transports = false;
    qos.transport().user_transports.push_back(
        std::make_shared<eprosima::fastdds::rtps::SharedMemTransportDescriptor>());
    qos.transport().user_transports.push_back(udp);
    rtps::Locator_t localhost;
    rtps::IPLocator::setIPv4(localhost, "127.0.0.1");
    builtin.initialPeersList.push_back(localhost);
    qos.user_data().data_vec(user_data);
    qos.name("hostile_peer");
    dds::DomainParticipant* p = factory->create_participant(domain, qos);
    if (p == nullptr) {
        std::fprintf(stderr, "hostile_peer: no participant\n");
        std::exit(2);
    }
    return p;
}

dds::Topic* topic(dds::DomainParticipant* p, const std::string& name, const std::string& type) {
    if (p->find_type(type).empty()) {
        dds::TypeSupport ts(new RawType(type));
        if (ts.register_type(p) != ReturnCode_t::RETCODE_OK) {
            std::fprintf(stderr, "hostile_peer: type not registered\n");
            std::exit(2);
        }
    }
    if (auto* existing = dynamic_cast<dds::Topic*>(p->lookup_topicdescription(name))) {
        return existing;
    }
    dds::Topic* t = p->create_topic(name, type, dds::TOPIC_QOS_DEFAULT);
    if (t == nullptr) {
        std::fprintf(stderr, "hostile_peer: topic not created\n");
        std::exit(2);
    }
    return t;
}

std::vector<uint8_t> bytes(const char* s, size_t n) {
    return std::vector<uint8_t>(reinterpret_cast<const uint8_t*>(s),
                                reinterpret_cast<const uint8_t*>(s) + n);
}

// Pseudo-random bytes (xorshift), the same every run.
std::vector<uint8_t> garbage(size_t n, uint64_t seed) {
    std::vector<uint8_t> out(n);
    uint64_t x = seed | 1;
    for (auto& b : out) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        b = static_cast<uint8_t>(x);
    }
    return out;
}

void run_for(int secs) {
    std::this_thread::sleep_for(std::chrono::seconds(secs));
}

int names(int secs) {
    // USER_DATA that is no `key=value;` list and not UTF-8, with an `enclave=` that is not
    // UTF-8 either.
    std::vector<uint8_t> user_data = bytes("enclave=\xff\xfe;\x00\x01=;;==\xc3(", 18);
    auto junk = garbage(300, 7);
    user_data.insert(user_data.end(), junk.begin(), junk.end());
    dds::DomainParticipant* p = participant(user_data);
    dds::Publisher* pub = p->create_publisher(dds::PUBLISHER_QOS_DEFAULT);
    dds::Subscriber* sub = p->create_subscriber(dds::SUBSCRIBER_QOS_DEFAULT);

    std::string bad_topic("rt/bad\xff\xfe");
    std::string good_type("std_msgs::msg::dds_::String_");
    std::string bad_type("std_msgs::msg::dds_::String_\xff\xfe");
    std::string half_utf8("rt/chatter\xe2\x82");  // a truncated three-byte sequence

    dds::DataWriterQos wq = pub->get_default_datawriter_qos();
    wq.user_data().data_vec(bytes("typehash=\xff\xfe;clientid=\x80\x80;", 28));
    dds::DataReaderQos rq = sub->get_default_datareader_qos();
    rq.user_data().data_vec(garbage(200, 11));

    // A writer and a reader on a topic whose name is not UTF-8.
    pub->create_datawriter(topic(p, bad_topic, good_type), wq);
    sub->create_datareader(topic(p, bad_topic, good_type), rq);
    // A writer on a ROS-looking topic whose type name is not UTF-8.
    pub->create_datawriter(topic(p, "rt/chatter_bad_type", bad_type), wq);
    // A reader on a name that ends in the middle of a character.
    sub->create_datareader(topic(p, half_utf8, good_type), rq);
    // Service-looking topics with bad names, both directions.
    pub->create_datawriter(topic(p, "rq/svc\xff" "Request", bad_type), wq);
    sub->create_datareader(topic(p, "rr/svc\xff" "Reply", bad_type), rq);
    std::printf("ready\n");
    std::fflush(stdout);
    run_for(secs);
    std::printf("done 0\n");
    return 0;
}

dds::DataWriter* keep_all_writer(dds::DomainParticipant* p, const std::string& name,
                                 const std::string& type, bool transient_local) {
    dds::Publisher* pub = p->create_publisher(dds::PUBLISHER_QOS_DEFAULT);
    dds::DataWriterQos q = pub->get_default_datawriter_qos();
    q.reliability().kind = dds::RELIABLE_RELIABILITY_QOS;
    q.history().kind = dds::KEEP_ALL_HISTORY_QOS;
    q.durability().kind =
        transient_local ? dds::TRANSIENT_LOCAL_DURABILITY_QOS : dds::VOLATILE_DURABILITY_QOS;
    q.endpoint().history_memory_policy = rtps::PREALLOCATED_WITH_REALLOC_MEMORY_MODE;
    q.publish_mode().kind = dds::SYNCHRONOUS_PUBLISH_MODE;
    q.reliability().max_blocking_time = eprosima::fastrtps::Duration_t(0, 200000000);
    dds::DataWriter* w = pub->create_datawriter(topic(p, name, type), q);
    if (w == nullptr) {
        std::fprintf(stderr, "hostile_peer: no writer\n");
        std::exit(2);
    }
    return w;
}

// Writes `sample` for `secs` seconds as fast as the writer takes it; returns the writes done.
// `vary` changes the bytes after the header each time (a different malformed sample).
long write_for(dds::DataWriter* w, Bytes& sample, int secs, bool vary, long pause_us = 0) {
    auto until = std::chrono::steady_clock::now() + std::chrono::seconds(secs);
    long writes = 0;
    uint64_t x = 99;
    while (std::chrono::steady_clock::now() < until) {
        if (vary && sample.data.size() > 8) {
            x = x * 6364136223846793005ULL + 1442695040888963407ULL;
            std::memcpy(sample.data.data() + 4, &x, sizeof x);
        }
        if (w->write(&sample)) {
            ++writes;
        }
        if (pause_us > 0) {
            std::this_thread::sleep_for(std::chrono::microseconds(pause_us));
        }
    }
    return writes;
}

int discovery_info(int secs) {
    dds::DomainParticipant* p = participant(bytes("enclave=/;", 10));
    dds::DataWriter* w = keep_all_writer(
        p, "ros_discovery_info", "rmw_dds_common::msg::dds_::ParticipantEntitiesInfo_", true);
    std::printf("ready\n");
    std::fflush(stdout);
    // An encapsulation header and a few bytes: too short for a ParticipantEntitiesInfo.
    Bytes sample{bytes("\x00\x01\x00\x00\x07\x00\x00\x00\xff\xff\xff\x7f", 12)};
    long n = write_for(w, sample, secs, true);
    std::printf("done %ld\n", n);
    return 0;
}

int flood(const std::string& name, const std::string& type, size_t size, int secs,
          long pause_us) {
    dds::DomainParticipant* p = participant(bytes("enclave=/;", 10));
    dds::DataWriter* w = keep_all_writer(p, name, type, false);
    std::printf("ready\n");
    std::fflush(stdout);
    // The flood starts once a reader is matched: a volatile writer's samples written before
    // would reach nobody.
    auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    dds::PublicationMatchedStatus matched;
    while (w->get_publication_matched_status(matched) == ReturnCode_t::RETCODE_OK &&
           matched.current_count == 0 && std::chrono::steady_clock::now() < give_up) {
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    // A std_msgs/ByteMultiArray of BYTES bytes in all (little-endian CDR): no dimensions, a
    // data offset of 0, then the data. Read as another type it is just bytes.
    size = size < 16 ? 16 : size;
    Bytes sample{garbage(size, 3)};
    const uint32_t header[4] = {0x00000100u, 0u, 0u, static_cast<uint32_t>(size - 16)};
    std::memcpy(sample.data.data(), header, sizeof header);
    long n = write_for(w, sample, secs, false, pause_us);
    std::printf("done %ld\n", n);
    std::fflush(stdout);
    // What a pushed-back reader has not taken yet is still in the writer's history: it reaches
    // the reader as room frees (at the writer's heartbeats) for as long as the writer lives.
    while (std::fgetc(stdin) != EOF) {
    }
    return 0;
}

}  // namespace hostile

int main(int argc, char** argv) {
    using namespace hostile;
    std::string mode = argc > 1 ? argv[1] : "";
    if (mode == "names" && argc == 3) {
        return names(std::atoi(argv[2]));
    }
    if (mode == "discovery-info" && argc == 3) {
        return discovery_info(std::atoi(argv[2]));
    }
    if (mode == "flood" && (argc == 6 || argc == 7)) {
        return flood(argv[2], argv[3], static_cast<size_t>(std::atol(argv[4])),
                     std::atoi(argv[5]), argc == 7 ? std::atol(argv[6]) : 0);
    }
    std::fprintf(stderr,
                 "usage: hostile_peer names SECS | discovery-info SECS | "
                 "flood TOPIC TYPE BYTES SECS [PAUSE_US]\n");
    return 2;
}
